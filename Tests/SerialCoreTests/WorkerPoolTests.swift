import Glibc
import SerialCore
import SerialTestSupport
import Testing

/// What is particular to queues on a `WorkerPool`; the guarantees both modes share are checked
/// by the SerialQueue suites, which run every test in both modes. Pools here have unique labels
/// so their threads can be recognised by name while other suites run in parallel.
@Suite("WorkerPool", .onItsOwnThread)  // its tests wait for pool work: off the cooperative threads
struct WorkerPoolTests {
    @Test func manyQueuesRunOnThePoolsThreadsOnly() {
        let pool = WorkerPool(threads: 2, label: "pool-only")
        let threads = LockedValue<Set<UInt>>([])
        let done = TestSemaphore()
        let queues = (0..<1_000).map { SerialQueue(label: "q\($0)", pool: pool) }
        for queue in queues {
            queue.async {
                let id = CurrentThreadID.value
                threads.withLock { _ = $0.insert(id) }
                done.signal()
            }
        }
        for _ in queues { #expect(done.wait(), "a pooled queue's work never ran") }
        let used = threads.withLock { $0 }
        #expect(used.count <= 2, "1,000 queues on a 2-thread pool ran on \(used.count) threads")
        #expect(!used.contains(CurrentThreadID.value))
        #expect(currentThreadNames().filter { $0 == "pool-only" }.count == 2)
        #expect(pool.queueCount == 1_000)
        withExtendedLifetime(queues) {}  // an optimized build would release them before the count
    }

    @Test func aBusyQueueCannotStarveAnotherOnAOneThreadPool() {
        let pool = WorkerPool(threads: 1, label: "pool-fair")
        let busy = SerialQueue(label: "busy", pool: pool)
        let other = SerialQueue(label: "other", pool: pool)
        let busyRan = TestCounter()
        let seenByOther = LockedValue(-1)
        let done = TestSemaphore()
        let gate = TestSemaphore()
        busy.async { _ = gate.wait() }  // holds the only thread until everything is queued
        for _ in 0..<10_000 { busy.async { busyRan.increment() } }
        other.async { seenByOther.withLock { $0 = busyRan.value } }
        busy.async { done.signal() }
        gate.signal()
        #expect(done.wait(), "the busy queue never drained")
        let seen = seenByOther.withLock { $0 }
        // A turn takes at most 64 items: the other queue runs after the busy queue's first turn.
        #expect(seen >= 0 && seen < 64, "the other queue ran after \(seen) of the busy queue's 10,000 items")
    }

    @Test func aPoolThreadHoldsOnlyTheQueueWhoseTurnItRuns() {
        let pool = WorkerPool(threads: 1, label: "pool-current")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let seen = LockedLog()
        let done = TestSemaphore()
        a.async {
            seen.append("in a: a \(a.isCurrent) b \(b.isCurrent)")
            b.async {
                seen.append("in b: a \(a.isCurrent) b \(b.isCurrent)")
                a.sync { seen.append("in b → a.sync: a \(a.isCurrent) b \(b.isCurrent)") }
                done.signal()
            }
        }
        #expect(done.wait(), "the pooled work never ran")
        #expect(seen.entries == [
            "in a: a true b false", "in b: a false b true", "in b → a.sync: a true b true",
        ])
    }

    @Test func syncFromAPoolThreadIntoABusyQueueOfTheSamePoolDoesNotDeadlock() {
        let pool = WorkerPool(threads: 1, label: "pool-block")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let bStarted = TestSemaphore()
        let proceed = TestSemaphore()
        let done = TestSemaphore()
        // b's work holds the pool's only thread; a gets work meanwhile, so b's `a.sync` must wait
        // for a's turn, which needs a thread: the pool starts a stand-in while b's thread waits.
        b.async {
            bStarted.signal()
            _ = proceed.wait()
            let value = a.sync { 42 }
            if value == 42 { done.signal() }
        }
        #expect(bStarted.wait())
        let aRan = TestFlag()
        a.async { aRan.set() }
        proceed.signal()
        #expect(done.wait(), "a sync from the pool's only thread into a busy queue deadlocked")
        #expect(aRan.isSet, "the sync body ran before earlier work of its queue")
    }

    @Test(arguments: [ShutdownMode.drain, .cancelPending])
    func shutdownShutsDownEveryAttachedQueueThenStopsTheThreads(mode: ShutdownMode) {
        let pool = WorkerPool(threads: 2, label: "pool-stop")
        let queues = (0..<100).map { SerialQueue(label: "s\($0)", pool: pool) }
        let ran = TestCounter()
        let handlers = TestCounter()
        let gate = TestSemaphore()
        var subscriptions: [ShutdownSubscription] = []
        for queue in queues {
            queue.suspend()  // nothing runs before the shutdown
            for _ in 0..<10 { queue.async { ran.increment() } }
            subscriptions.append(queue.whenShutDown { _ in
                handlers.increment()
                #expect(queue.isCurrent, "a pooled queue's shutdown handler ran off its turn")
            })
        }
        _ = gate
        pool.shutdown(mode)
        #expect(ran.value == (mode == .drain ? 1_000 : 0))
        #expect(handlers.value == 100)
        #expect(pool.isShutDown)
        #expect(pool.queueCount == 0)
        #expect(queues.allSatisfy { $0.isShutDown })
        #expect(throws: SerialQueueError.shutDown(label: "s0")) { try queues[0].tryAsync {} }
        #expect(throws: SerialQueueError.poolShutDown(label: "late", pool: "pool-stop")) {
            _ = try SerialQueue.make(label: "late", pool: pool)
        }
        #expect(eventually { !currentThreadNames().contains("pool-stop") }, "the pool's threads outlived its shutdown")
        _ = subscriptions
    }

    @Test func releasingThePoolAndItsQueuesEndsItsThreads() {
        let ran = TestCounter()
        do {
            let pool = WorkerPool(threads: 2, label: "pool-drop")
            for index in 0..<100 {
                let queue = SerialQueue(label: "d\(index)", pool: pool)
                queue.asyncAfter(delay: .seconds(3600)) {}  // cancelled by the release
                for _ in 0..<10 { queue.async { ran.increment() } }
                // Released here: the release waits until its work has drained on the pool.
            }
            #expect(ran.value == 1_000)
            #expect(pool.queueCount == 0)
        }
        #expect(eventually { !currentThreadNames().contains("pool-drop") }, "a released pool kept its threads")
    }

    @Test func delayedWorkOfAnIdlePooledQueueRunsOnTime() {
        let pool = WorkerPool(threads: 1, label: "pool-timer")
        let queue = SerialQueue(label: "delayed", pool: pool)
        let ran = TestSemaphore()
        let start = MonotonicInstant.now()
        let ranAt = LockedValue<UInt64>(0)
        queue.asyncAfter(delay: .milliseconds(20)) {
            ranAt.withLock { $0 = MonotonicInstant.now().nanoseconds }
            ran.signal()
        }
        #expect(ran.wait(), "delayed work on a pooled queue never ran")
        #expect(ranAt.withLock { $0 } >= start.nanoseconds + 20_000_000, "delayed work ran early")
    }

    /// Delayed work that falls due while every pool thread is busy goes ahead of the queues
    /// waiting for a thread: it runs when the current turn ends (at most 64 items of one queue),
    /// not behind a turn of every busy queue. Counted in items started while the due queue waited
    /// in the run queue, not from its deadline: a timer thread that a loaded machine wakes late
    /// has not made it due yet, and load cannot blur the count.
    @Test func delayedWorkThatFallsDueWhileThePoolIsBusyRunsAfterTheCurrentTurn() {
        let pool = WorkerPool(threads: 1, label: "pool-due")
        let busy = (0..<3).map { SerialQueue(label: "busy\($0)", pool: pool) }
        let delayed = SerialQueue(label: "delayed", pool: pool)
        let delayedRan = TestFlag()
        let startedAfterDue = TestCounter()
        let ran = TestSemaphore()
        let gate = TestSemaphore()
        busy[0].async { _ = gate.wait() }  // nothing runs until everything is queued
        for queue in busy {
            for _ in 0..<200 {
                queue.async {
                    if !delayedRan.isSet && pool._runQueueHolds(delayed) { startedAfterDue.increment() }
                    let until = monotonicNow() + 500_000  // half a millisecond of work
                    while monotonicNow() < until {}
                }
            }
        }
        delayed.asyncAfter(delay: .milliseconds(10)) {
            delayedRan.set()
            ran.signal()
        }
        gate.signal()
        #expect(ran.wait(), "the delayed work never ran")
        let count = startedAfterDue.value
        #expect(count <= 64, "\(count) items of busy queues started after the delayed work fell due (a turn is 64)")
    }

    /// Delayed work that falls due while the pool is busy runs in the order it fell due: each
    /// due queue goes to the head of the run queue *behind* the due work already there. Six
    /// queues fall due one after another while the one thread runs a held item; once all six wait
    /// in the run queue the item ends and they must run first-due first. Ordered by the run queue
    /// alone, not by time: the hold lasts until all six are there, however slow the machine.
    @Test func delayedWorkThatFallsDueWhileThePoolIsBusyRunsInTheOrderItFellDue() {
        let order = Self.dueOrderBehindAHeldItem(label: "pool-due-order") { index, queue, pool, record in
            // One queue falls due at a time: the next is armed only once the previous waits.
            queue.asyncAfter(delay: .milliseconds(1), record)
            #expect(
                eventually(timeout: .seconds(20)) { pool._runQueueCount == index + 1 },
                "due\(index) never reached the run queue")
        }
        #expect(order == Array(0..<6), "due work ran out of the order it fell due")
    }

    /// Six queues whose delayed work falls due at the same instant, armed in order 0...5: they
    /// fell due together, so the order they were scheduled in is the only order there is (the
    /// pool's timer heap alone broke the tie as 0, 5, 4, 3, 2, 1).
    @Test func queuesFallingDueAtTheSameInstantRunInTheOrderTheyWereScheduled() {
        let deadline = MonotonicInstant.now().advanced(by: .milliseconds(200))
        let order = Self.dueOrderBehindAHeldItem(label: "pool-due-ties") { _, queue, _, record in
            queue.asyncAfter(deadline: deadline, record)
        }
        #expect(order == Array(0..<6), "ties fell due out of the order they were scheduled in")
    }

    /// Holds a one-thread pool's thread, lets `arm` give six queues their delayed work (it gets
    /// each queue's index, the queue, the pool and the work to schedule), waits until all six wait
    /// in the run queue, lets the thread go, and returns the order the six ran in.
    static func dueOrderBehindAHeldItem(
        label: String,
        _ arm: (Int, SerialQueue, WorkerPool, @escaping @Sendable () -> Void) -> Void
    ) -> [Int] {
        let pool = WorkerPool(threads: 1, label: label)
        let busy = SerialQueue(label: "\(label)-busy", pool: pool)
        let delayed = (0..<6).map { SerialQueue(label: "due\($0)", pool: pool) }
        let order = LockedValue<[Int]>([])
        let held = TestSemaphore()
        let gate = TestSemaphore()
        let allRan = TestSemaphore()
        busy.async {
            held.signal()
            _ = gate.wait(timeout: .seconds(30))
        }
        #expect(held.wait(), "the pool thread never took the held item")
        for (index, queue) in delayed.enumerated() {
            arm(index, queue, pool) {
                let count = order.withLock { order in
                    order.append(index)
                    return order.count
                }
                if count == delayed.count { allRan.signal() }
            }
        }
        #expect(
            eventually(timeout: .seconds(20)) { pool._runQueueCount == delayed.count },
            "the six never all reached the run queue")
        gate.signal()
        #expect(allRan.wait(), "the due work never all ran")
        return order.withLock { $0 }
    }

    /// Delayed work that falls due while a thread runs a chain of `next`-slot hops (two queues
    /// handing batches of 64 items to each other, each turn making the other runnable) runs
    /// after the current turn, not at the end of the chain. Counted in items, not time: the
    /// chain is held in its first hop until the due queue waits in the run queue.
    @Test func delayedWorkThatFallsDueDuringAChainOfHopsRunsAfterTheCurrentTurn() async {
        let pool = WorkerPool(threads: 1, label: "pool-hops")
        let ping = SerialQueue(label: "ping", pool: pool)
        let pong = SerialQueue(label: "pong", pool: pool)
        let delayed = SerialQueue(label: "hop-due", pool: pool)
        let rounds = 100  // more turns than the 64 hops a chain may take in a row
        let itemsRun = TestCounter()
        let ranAfterItems = LockedValue<Int?>(nil)
        let inChain = TestSemaphore()
        let gate = TestSemaphore()
        let delayedRan = TestSemaphore()
        let chainDone = TestSemaphore()
        /// Posts round `round`'s batch of 64 items (even rounds to pong, odd to ping); its last
        /// item posts the next round's.
        @Sendable func post(round: Int) {
            let queue = round % 2 == 0 ? pong : ping
            for index in 0..<64 {
                queue.async {
                    if round == 0 && index == 0 {
                        inChain.signal()
                        _ = gate.wait(timeout: .seconds(30))
                    }
                    _ = itemsRun.increment()
                    guard index == 63 else { return }
                    if round + 1 < rounds { post(round: round + 1) } else { chainDone.signal() }
                }
            }
        }
        let outcome = await offThePool { () -> String? in
            // Posted from a turn of ping, round 0 goes to the thread's `next` slot: a chain starts.
            ping.async { post(round: 0) }
            guard inChain.wait(timeout: .seconds(20)) else { return "the chain never started" }
            delayed.asyncAfter(delay: .milliseconds(1)) {
                ranAfterItems.withLock { $0 = itemsRun.value }
                delayedRan.signal()
            }
            guard eventually(timeout: .seconds(20), { pool._runQueueCount > 0 }) else {
                gate.signal()
                return "the delayed work never fell due"
            }
            gate.signal()
            guard delayedRan.wait(timeout: .seconds(20)) else { return "the delayed work never ran" }
            guard chainDone.wait(timeout: .seconds(20)) else { return "the chain never ended" }
            return nil
        }
        #expect(outcome == nil, "\(outcome ?? "")")
        let before = ranAfterItems.withLock { $0 }
        // The held turn had 64 items; every item after them ran late.
        #expect(
            before.map { $0 <= 64 } == true, "the due work ran after \(before ?? -1) items of the chain (a turn is 64)")
    }

    /// Two queues that post to each other forever hop through the thread's `next` slot; a queue
    /// (or a task job) made runnable by the chain's first item, after `next` was taken, waits in
    /// the thread's own run queue. It runs once the chain reaches its hop limit (64), not when the
    /// chain ends: counted in hops, not time. Before the fix the chain went to the run queue's
    /// head at its hop limit and came straight back, and `x` never ran.
    @Test(arguments: [false, true])
    func aQueueInTheOwnRunQueueGetsItsTurnWhileAHopChainRunsOn(taskJob: Bool) {
        let pool = WorkerPool(threads: 1, label: "pool-chain")
        final class Chain: Sendable {
            let ping: SerialQueue
            let pong: SerialQueue
            let hops = TestCounter()
            let hopsWhenXRan = LockedValue<Int?>(nil)
            let ended = TestSemaphore()
            static let giveUpAfter = 10_000
            init(pool: WorkerPool) {
                self.ping = SerialQueue(label: "ping", pool: pool)
                self.pong = SerialQueue(label: "pong", pool: pool)
            }
            /// Ends once `x` ran (or after `giveUpAfter` hops without it).
            func hit(onPing: Bool) {
                let hops = self.hops.increment()
                guard self.hopsWhenXRan.withLock({ $0 }) == nil, hops < Self.giveUpAfter else { return self.ended.signal() }
                if onPing { self.pong.async { self.hit(onPing: false) } } else { self.ping.async { self.hit(onPing: true) } }
            }
            func xRuns() { self.hopsWhenXRan.withLock { $0 = self.hops.value } }
        }
        let chain = Chain(pool: pool)
        let x = SerialQueue(label: "x", pool: pool)
        chain.ping.async {
            chain.pong.async { chain.hit(onPing: false) }  // the `next` slot
            if taskJob { Task(executorPreference: pool) { chain.xRuns() } } else { x.async { chain.xRuns() } }
        }
        #expect(chain.ended.wait(timeout: .seconds(60)), "the chain neither ended nor gave up")
        let ranAfter = chain.hopsWhenXRan.withLock { $0 }
        #expect(
            ranAfter.map { $0 <= 2 * 64 } == true,
            "\(taskJob ? "a task job" : "queue x") in the own run queue ran after \(ranAfter.map(String.init) ?? "more than \(Chain.giveUpAfter)") hops (the limit is 64)")
    }

    @Test func anIdlePooledQueueCanBeReleasedWhileItsTimerIsArmed() {
        let pool = WorkerPool(threads: 1, label: "pool-arm")
        for index in 0..<200 {
            let queue = SerialQueue(label: "t\(index)", pool: pool)
            queue.asyncAfter(delay: .milliseconds(index % 5)) {}
            if index.isMultiple(of: 2) { queue.sync {} }
        }
        // A timer that fired for a released queue would touch freed memory (ASan/TSan catch it).
        let ran = TestSemaphore()
        let last = SerialQueue(label: "last", pool: pool)
        last.asyncAfter(delay: .milliseconds(10)) { ran.signal() }
        #expect(ran.wait(), "delayed work after many released timers never ran")
    }

    @Test func makeOnAPoolReportsAShutDownPool() {
        let pool = WorkerPool(threads: 1, label: "pool-closed")
        pool.shutdown()
        #expect(throws: SerialQueueError.poolShutDown(label: "x", pool: "pool-closed")) {
            _ = try SerialQueue.make(label: "x", pool: pool)
        }
    }
}
