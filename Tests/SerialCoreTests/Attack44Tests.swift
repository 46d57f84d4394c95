import Glibc
import SerialCore
import SerialTestSupport
import Synchronization
import Testing

/// Attack 44 on issue 39 item 3 (02777bf..012c488). Two halves:
///
/// 1. Sampled wait times (`QueueCounters`): what `QueueStatistics` ("Wait time") says a caller
///    sees in `waitTime` and the exact counts. The watchdog's timing is attacked on virtual time
///    (`Attack44Scenarios`).
/// 2. The hop's path without retains of the pool (`QueueCore.unretainedPool`) nor of the thread's
///    `PoolWorker` (`CurrentQueueStack.unretainedPoolWorker`): lifetimes of queues, pools and pool
///    threads while hops are in flight, across pools, with stand-in threads. These check liveness
///    and counts on real threads; their real target is AddressSanitizer and ThreadSanitizer
///    (`--sanitize=address --disable-xctest`, `--sanitize=thread`), which report a use after free
///    or a race on the paths they drive.
///
/// Real threads: nothing assumes how fast a thread runs; every wait is bounded and fails with a
/// message. Blocking bodies run on pool threads or pthreads, never on Swift's cooperative threads.
@Suite("Attack 44: sampled waits and unretained hops", .onItsOwnThread)
struct Attack44Tests {
    static let patience = Duration.seconds(60)
    /// Rounds of the lifetime tests are multiplied by `ATTACK44_SCALE` (default 1), for longer
    /// runs under the sanitizers.
    static var scale: Int { max(1, getenv("ATTACK44_SCALE").flatMap { Int(String(cString: $0)) } ?? 1) }
    static var reproduce: Bool { getenv("ATTACK44_REPRODUCE").map { String(cString: $0) == "1" } ?? false }

    // MARK: 1. Sampled wait times

    /// A chain: each item queues the next as its first statement, so the queue's `depth` (what is
    /// queued or running) never reaches 0 until the last item, and each batch holds one item.
    static func runChain(on queue: SerialQueue, items: Int) -> Bool {
        let done = TestSemaphore()
        @Sendable func step(_ left: Int) {
            if left > 1 { queue.async { step(left - 1) } } else { done.signal() }
        }
        queue.async { step(items) }
        return done.wait(timeout: Self.patience)
    }

    /// `QueueStatistics`: "the queue's first wait, then one wait in eight … are timed"; the counts
    /// are exact. A chain of 80 one-item batches: 10 timed waits (11 when the closing `sync` had to
    /// wait: 81 waits), and `submitted == executed`.
    @Test(arguments: [false, true])
    func aChainOfWaitsIsSampledOneInEightAndCountedExactly(pooled: Bool) {
        let pool = pooled ? WorkerPool(threads: 2, label: "a44-chain-pool") : nil
        let queue = pool.map { SerialQueue(label: "a44-chain", pool: $0) } ?? SerialQueue(label: "a44-chain")
        #expect(Self.runChain(on: queue, items: 80), "the chain of 80 items did not end within 60 s")
        queue.sync {}
        let figures = queue.statistics
        // The closing `sync` is an item too when it finds the last item still running (81).
        #expect((80...81).contains(figures.submitted) && figures.executed == figures.submitted && figures.depth == 0, "\(figures)")
        let waits = figures.submitted  // each item (and a waiting `sync`) entered an empty FIFO
        #expect(figures.waitTime.count == (waits + 7) / 8, "\(waits) waits, each begun in an empty FIFO: \(figures)")
        pool?.shutdown()
    }

    /// `QueueStatistics` ("Wait time"): "A queue that never empties stays timed from batch to
    /// batch once one of its waits is. So `waitTime.count` counts timed batches, not all of them."
    /// Here the queue never empties as its figures show it: `depth` (queued or running) stays at 1
    /// or more from the first item to the last, and its first wait is timed. Every batch should
    /// then be timed: 80 of 80. Seen: 10 of 80, dedicated and pooled alike (2 of 2 runs each, the
    /// count is deterministic): a batch takes the whole FIFO (dedicated: always; pooled: up to 64
    /// items), so the next item begins a new wait in an empty FIFO, sampled one in eight. The
    /// sentence holds only for a FIFO that a batch leaves items in (a pooled queue more than 64
    /// deep). A doc precision finding, not a wrong count: the doc now says what holds (items a
    /// pooled turn leaves go on waiting from its batch); the test of the old sentence stays,
    /// disabled unless ATTACK44_REPRODUCE=1.
    @Test(.enabled(if: Self.reproduce), arguments: [false, true])
    func aQueueThatNeverEmptiesStaysTimedFromBatchToBatch(pooled: Bool) {
        let pool = pooled ? WorkerPool(threads: 2, label: "a44-busy-pool") : nil
        let queue = pool.map { SerialQueue(label: "a44-busy", pool: $0) } ?? SerialQueue(label: "a44-busy")
        let lowestDepth = Locked(Int.max)
        let done = TestSemaphore()
        @Sendable func step(_ left: Int) {
            if left > 1 { queue.async { step(left - 1) } }
            let depth = queue.statistics.depth  // this item still counts: it has not finished
            lowestDepth.withLock { $0 = min($0, depth) }
            if left == 1 { done.signal() }
        }
        queue.async { step(80) }
        #expect(done.wait(timeout: Self.patience), "the chain did not end within 60 s")
        queue.sync {}
        let figures = queue.statistics
        let lowest = lowestDepth.withLock { $0 }
        #expect(lowest >= 1, "the queue emptied (depth \(lowest)): the premise does not hold")
        #expect(
            figures.waitTime.count == figures.executed,
            "a queue whose depth never fell below \(lowest) timed \(figures.waitTime.count) of its \(figures.executed) one-item batches: \(figures)")
        pool?.shutdown()
    }

    /// SerialQueueInDepth ("Statistics are always on"): a queue times "every wait that begins while
    /// a watchdog sleeps armed on the queue". A watchdog (thresholds 60 s: it reports nothing, looks
    /// every millisecond while awake) watches q; 20 times, once it sleeps (its look found q idle
    /// and armed it), one item is queued: each of those 20 waits must be timed, whatever the
    /// sampling counter says. So `waitTime.count` ≥ 20 (waits begun while it was awake add some).
    @Test(arguments: [false, true])
    func everyWaitBegunWhileAWatchdogSleepsArmedIsTimed(pooled: Bool) {
        let pool = pooled ? WorkerPool(threads: 2, label: "a44-armed-pool") : nil
        let queue = pool.map { SerialQueue(label: "a44-armed", pool: $0) } ?? SerialQueue(label: "a44-armed")
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(60), waitingThreshold: .seconds(60), checkInterval: .milliseconds(1)
        ) { stall in Issue.record("no stall expected: \(stall)") }
        watchdog.watch(queue)
        let done = TestSemaphore()
        for round in 0..<20 {
            guard eventually(timeout: Self.patience, { watchdog._isAsleep }) else {
                Issue.record("round \(round): the watchdog did not go to sleep over an idle queue within 60 s")
                break
            }
            queue.async { done.signal() }  // begins a wait while the watchdog sleeps armed
            #expect(done.wait(timeout: Self.patience), "round \(round): the item did not run within 60 s")
        }
        queue.sync {}
        watchdog.stop()
        let figures = queue.statistics
        #expect(figures.waitTime.count >= 20, "20 waits begun while a watchdog slept armed, \(figures.waitTime.count) timed: \(figures)")
        pool?.shutdown()
    }

    /// `submitted == executed + dropped + depth` under load from four pthreads (async, sync,
    /// suspension, a cancelling shutdown at the end), pooled and dedicated: the sampling changed
    /// which branches the counters take, not the counts.
    @Test(arguments: [false, true])
    func theCountsStayExactUnderLoad(pooled: Bool) {
        let pool = pooled ? WorkerPool(threads: 2, label: "a44-load-pool") : nil
        let queue = pool.map { SerialQueue(label: "a44-load", pool: $0) } ?? SerialQueue(label: "a44-load")
        let ran = TestCounter()
        let syncs = TestCounter()
        runThreads(4) { index in
            for round in 0..<500 {
                switch index {
                case 0, 1: queue.async { _ = ran.increment() }
                case 2:
                    queue.sync { _ = syncs.increment() }
                default:
                    if round % 50 == 0 {
                        queue.suspend()
                        queue.async { _ = ran.increment() }
                        let figures = queue.statistics
                        #expect(figures.submitted == figures.executed + figures.dropped + figures.depth, "suspended: \(figures)")
                        queue.resume()
                    } else {
                        queue.async { _ = ran.increment() }
                    }
                }
            }
        }
        queue.suspend()
        for _ in 0..<20 { queue.async { _ = ran.increment() } }
        let report = queue.shutdown(.cancelPending)
        queue.resume()
        #expect(eventually(timeout: Self.patience) { queue.statistics.depth == 0 }, "the queue did not drain: \(queue.statistics)")
        let figures = queue.statistics
        #expect(figures.submitted == figures.executed + figures.dropped + figures.depth, "\(figures)")
        #expect(figures.dropped == report.cancelledWork, "\(figures) vs \(report)")
        #expect(ran.value + report.cancelledWork == 3 * 500 + 20, "ran \(ran.value), dropped \(report.cancelledWork)")
        pool?.shutdown()
    }

    // MARK: 2. Lifetimes on the unretained hop path

    /// Queues released (their last reference dropped by the test) while their work is in flight on
    /// the pool: each item hops to a second queue, which hops back to the released one's successor.
    /// Promise (SerialQueueInDepth, "Releasing the last reference"): "work already enqueued still
    /// runs"; the pool lives while a queue created on it does.
    @Test func queuesReleasedWhileTheirWorkHopsOnThePool() {
        let pool = WorkerPool(threads: 2, label: "a44-rel")
        let sink = SerialQueue(label: "a44-rel-sink", pool: pool)
        let ran = TestCounter()
        let done = TestSemaphore()
        let rounds = 300 * Self.scale
        for round in 0..<rounds {
            var queue: SerialQueue? = SerialQueue(label: "a44-rel-\(round % 10)", pool: pool)
            let hops = TestCounter()
            for _ in 0..<3 {
                queue!.async {
                    sink.async {
                        if hops.increment() == 3 {
                            _ = ran.increment()
                            done.signal()
                        }
                    }
                }
            }
            queue = nil  // released with its three items queued or running
        }
        for round in 0..<rounds {
            guard done.wait(timeout: Self.patience) else {
                Issue.record("round \(round) of \(rounds): a released queue's work did not run within 60 s (ran \(ran.value))")
                break
            }
        }
        sink.sync {}
        pool.shutdown()
        #expect(pool.queueCount == 0)
    }

    /// The last reference of a pooled queue dropped from inside its own work (on its pool thread,
    /// within its own turn) and from another pool's thread (the release wakes it there:
    /// `makeRunnable` called on a thread whose `PoolWorker` belongs to the other pool).
    @Test func lastReferencesDroppedInsideTheirOwnWorkAndOnAnotherPoolsThread() {
        let home = WorkerPool(threads: 2, label: "a44-home")
        let other = WorkerPool(threads: 2, label: "a44-other")
        let releaser = SerialQueue(label: "a44-releaser", pool: other)
        let ran = TestCounter()
        let done = TestSemaphore()
        let rounds = 300 * Self.scale
        for round in 0..<rounds {
            let box = Locked<SerialQueue?>(SerialQueue(label: "a44-self-\(round % 10)", pool: home))
            let queue = box.withLock { $0! }
            if round % 2 == 0 {
                queue.async {
                    let mine = box.withLock { value -> SerialQueue? in
                        defer { value = nil }
                        return value
                    }
                    _ = mine  // the box's reference, dropped with this closure's local
                    _ = ran.increment()
                    done.signal()
                }
            } else {
                queue.async { _ = ran.increment() }
                releaser.async {
                    let mine = box.withLock { value -> SerialQueue? in
                        defer { value = nil }
                        return value
                    }
                    mine?.async { done.signal() }  // queued on home from other's thread, then released there
                }
            }
            // `queue` goes out of scope here: the box (or the work) may hold the last reference.
        }
        for round in 0..<rounds {
            guard done.wait(timeout: Self.patience) else {
                Issue.record("round \(round) of \(rounds): work of a queue released on a pool thread did not run within 60 s")
                break
            }
        }
        releaser.sync {}
        #expect(eventually(timeout: Self.patience) { home.queueCount == 0 }, "home still has \(home.queueCount) queues attached")
        other.shutdown()
        home.shutdown()
        #expect(ran.value == rounds)
    }

    /// Hops between two pools, both ways, with `sync` calls into the other pool from pool threads
    /// (the caller's thread blocks: a stand-in starts in its pool) and into a busy queue of the
    /// same pool. Promise (DESIGN, "Scale"): "every guarantee of the dedicated mode kept": each
    /// item runs once, in order per queue.
    @Test func hopsAcrossTwoPoolsWithSyncCallsAndStandIns() {
        let first = WorkerPool(threads: 1, label: "a44-p1")
        let second = WorkerPool(threads: 1, label: "a44-p2")
        let a = SerialQueue(label: "a44-a", pool: first)
        let a2 = SerialQueue(label: "a44-a2", pool: first)
        let b = SerialQueue(label: "a44-b", pool: second)
        let order = Locked<[Int]>([])
        let done = TestSemaphore()
        let total = 400 * Self.scale
        @Sendable func hop(_ index: Int) {
            guard index < total else { return done.signal() }
            order.withLock { $0.append(index) }
            switch index % 4 {
            case 0: b.async { hop(index + 1) }  // makeRunnable from first's thread onto second
            case 1: a.async { hop(index + 1) }  // and back
            case 2:
                b.sync {}  // a pool thread blocks in another pool's queue: a stand-in in its pool
                a2.async { b.async { hop(index + 1) } }
            default:
                a2.sync {}  // a queue of the same pool, maybe busy: the thread blocks, a stand-in
                a.async { hop(index + 1) }
            }
        }
        a.async { hop(0) }
        #expect(done.wait(timeout: Self.patience), "the hops across two pools did not end within 60 s")
        let seen = order.withLock { $0 }
        #expect(seen == Array(0..<total), "\(seen.count) hops, out of order or repeated")
        second.shutdown()
        first.shutdown()
    }

    /// How a pool ends while its queues hop.
    enum PoolEnding: String, CaseIterable, Sendable {
        /// `shutdown()` from a pthread.
        case shutdown
        /// The handle dropped by the test thread (its `deinit` waits for the threads).
        case releasedOutside
        /// The handle's last reference dropped inside a hop, on one of the pool's threads (its
        /// `deinit` does not wait there), the queues' last ones as their hops end.
        case releasedOnItsOwnThread
    }

    /// A pool ended while its queues hop among themselves with `tryAsync`. Promise (WorkerPool,
    /// "Lifetime"): "The pool lives while its handle or any queue created on it does"; `shutdown`
    /// "shuts down every queue still attached …, waits for them to exit, then stops the threads";
    /// later work "is rejected by their usual trap or error"; releasing the last reference "stops
    /// the threads once the released queues have drained". Each hop runs or is refused, and no
    /// thread of the pool is left once it ended.
    @Test(arguments: PoolEnding.allCases)
    func poolsEndedWhileTheirQueuesHop(ending: PoolEnding) {
        for round in 0..<(20 * Self.scale) {
            let poolBox = Locked<WorkerPool?>(WorkerPool(threads: 2, label: "a44-end"))
            var queues: [SerialQueue]? = (0..<4).map { SerialQueue(label: "a44-end-\($0)", pool: poolBox.withLock { $0! }) }
            let ran = TestCounter()
            let refused = TestCounter()
            let started = TestSemaphore()
            let chainsEnded = TestSemaphore()
            @Sendable func hop(_ from: [SerialQueue], _ index: Int, _ left: Int) {
                if index == 0 && left == 200 { started.signal() }
                guard left > 0 else {
                    if ending == .releasedOnItsOwnThread { poolBox.withLock { $0 = nil } }  // the handle, on a pool thread
                    return chainsEnded.signal()
                }
                _ = ran.increment()
                let there = from[(index + 1) % from.count]
                do {
                    try there.tryAsync { hop(from, index + 1, left - 1) }
                } catch {
                    _ = refused.increment()
                    chainsEnded.signal()
                }
            }
            // The closures hold the queues strongly (so a release ends only once the hops end).
            let all = queues!
            for start in 0..<2 { try? all[start].tryAsync { hop(all, start, 200) } }
            #expect(started.wait(timeout: Self.patience), "round \(round): the hops did not start")
            switch ending {
            case .shutdown:
                let ended = TestSemaphore()
                let pool = poolBox.withLock { $0! }
                runThreads(1) { _ in
                    pool.shutdown()
                    ended.signal()
                }
                #expect(ended.wait(timeout: Self.patience), "round \(round): shutdown did not return within 60 s")
                #expect(pool.queueCount == 0)
                poolBox.withLock { $0 = nil }
            case .releasedOutside:
                poolBox.withLock { $0 = nil }  // the queues (held by their own hops) keep the pool
            case .releasedOnItsOwnThread:
                break
            }
            queues = nil
            _ = queues
            for chain in 0..<2 {
                #expect(chainsEnded.wait(timeout: Self.patience), "round \(round): chain \(chain) of 2 did not end within 60 s")
            }
            #expect(ran.value + refused.value <= 2 * 201, "round \(round): \(ran.value) ran, \(refused.value) refused")
            if ending != .shutdown { #expect(ran.value == 2 * 200, "round \(round): \(ran.value) hops ran of 400, none refused") }
        }
        #expect(
            eventually(timeout: Self.patience) { !currentThreadNames().contains("a44-end") },
            "threads of ended pools are left: \(currentThreadNames().filter { $0 == "a44-end" }.count)")
    }

    /// Pooled actor hops (the path 02777bf made retain-free) across two pools, with every actor
    /// and its queue released after its round while the pools go on; then both pools shut down.
    /// Promise (ActorHops, SerialExecutor): each call runs isolated on its actor's queue
    /// (`preconditionIsCurrent` in each hop), every hop returns.
    @Test func pooledActorHopsAcrossTwoPoolsWithActorsReleasedEachRound() async {
        let first = WorkerPool(threads: 2, label: "a44-act1")
        let second = WorkerPool(threads: 2, label: "a44-act2")
        for round in 0..<(30 * Self.scale) {
            let hoppers = (0..<4).map { index in
                Attack44Hopper(queue: SerialQueue(label: "a44-act-\(index)", pool: index % 2 == 0 ? first : second))
            }
            let finished = TestSemaphore()
            let hops = TestCounter()
            Task {
                hops.increment(by: await hoppers[0].hop(100, through: hoppers))
                finished.signal()
            }
            let ended = await offThePool { finished.wait(timeout: Self.patience) }  // a pthread waits, bounded
            #expect(ended, "round \(round): 100 hops across two pools did not end within 60 s (\(hops.value))")
            guard ended else { break }
            #expect(hops.value == 100, "round \(round): \(hops.value) hops of 100")
        }
        await offThePool {
            second.shutdown()
            first.shutdown()
        }
        #expect(first.queueCount == 0 && second.queueCount == 0)
    }

    /// The stand-in's path: a one-thread pool whose only thread blocks in `sync` on a dedicated
    /// queue held busy, while other queues of the pool hop (they run on the stand-in); then the
    /// blocked thread returns and the surplus thread retires. Repeated, with a queue released in
    /// each round from the blocked thread's work. Promise (DESIGN, "Growing further"): every wait
    /// on a pool thread goes through one wrapper (stand-in, `next` given back).
    @Test func standInsStartAndRetireWhileQueuesHopAndAreReleased() {
        let pool = WorkerPool(threads: 1, label: "a44-stand")
        let busy = SerialQueue(label: "a44-busy-dedicated")
        let x = SerialQueue(label: "a44-x", pool: pool)
        let y = SerialQueue(label: "a44-y", pool: pool)
        let z = SerialQueue(label: "a44-z", pool: pool)
        for round in 0..<(100 * Self.scale) {
            let release = TestSemaphore()
            let holding = TestSemaphore()
            let hopped = TestSemaphore()
            let blockedDone = TestSemaphore()
            busy.async {
                holding.signal()
                _ = release.wait(timeout: Self.patience)
            }
            #expect(holding.wait(timeout: Self.patience), "round \(round): the dedicated queue did not start")
            var doomed: SerialQueue? = SerialQueue(label: "a44-doomed", pool: pool)
            let box = Locked<SerialQueue?>(doomed)
            doomed = nil
            x.async {
                y.async { z.async { hopped.signal() } }  // in x's thread's `next` slot: given back as it blocks
                busy.sync {}  // blocks the pool's only thread: the stand-in runs y and z
                let last = box.withLock { value -> SerialQueue? in
                    defer { value = nil }
                    return value
                }
                last?.async { blockedDone.signal() }  // then its last reference goes, on this thread
            }
            #expect(hopped.wait(timeout: Self.patience), "round \(round): y and z did not run while x's thread blocked")
            release.signal()
            #expect(blockedDone.wait(timeout: Self.patience), "round \(round): the released queue's work did not run")
        }
        x.sync {}
        pool.shutdown()
    }
}

/// An actor whose executor is a (pooled) `SerialQueue`: each call into it is a pooled hop.
actor Attack44Hopper {
    let queue: SerialQueue
    init(queue: SerialQueue) { self.queue = queue }
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }

    /// Hops `left` more times through `others` (by turns), returning how many hops it made.
    func hop(_ left: Int, through others: [Attack44Hopper]) async -> Int {
        self.queue.preconditionIsCurrent()
        guard left > 0 else { return 0 }
        return await others[left % others.count].hop(left - 1, through: others) + 1
    }
}

/// A value behind a mutex, in a class so that escaping closures can share it.
///
/// A pthread mutex, not `Synchronization.Mutex`: ThreadSanitizer does not see the latter's lock
/// (its futex operations are not instrumented), so values handed between threads through it were
/// reported as races (attack 45: "Swift access race" with both accesses inside `withLock`).
final class Locked<Value: Sendable>: @unchecked Sendable {  // `value` is guarded by `mutex`
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        self.mutex = .allocate(capacity: 1)
        pthread_mutex_init(self.mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        return body(&self.value)
    }
}
