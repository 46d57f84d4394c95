import Glibc
import SerialCore
import SerialTestSupport
import Synchronization
import Testing

/// Attack 46 on the sync pass (6460676, dc6ad7f): a `sync` body that returns while another
/// caller's turn is at the FIFO's head passes the queue straight to that caller
/// (`QueueState.passToNextSyncCaller`), and a pooled caller next in line behind a `sync` body
/// watches for its turn. Promises attacked (each test quotes its own): `SerialQueue.sync`'s
/// ordering, one owner at a time, `suspend`, `shutdown`, bounded queues' room, the wait graph's
/// traps, exact statistics.
@Suite("Attack 46: the sync pass")
struct Attack46Tests {
    static var reproduce: Bool { getenv("ATTACK46_REPRODUCE").map { String(cString: $0) == "1" } ?? false }


    // MARK: Room in a bounded queue

    /// `async` on a bounded queue: "a full queue makes the caller wait for room" — room that a
    /// worker makes by taking the FIFO wakes it. A queue bounded at 1: a `sync` body runs, caller
    /// B's turn fills the FIFO, producer P waits for room. The body returns and passes the queue
    /// to B (the FIFO is empty now); B returns to an idle queue. P must get its room and its item
    /// must run.
    @Test(arguments: QueueMode.allCases) func aPassThatEmptiesABoundedFIFOWakesAProducerWaitingForRoom(mode: QueueMode) {
        let queue = mode.queue(label: "a46-room-\(mode)", maximumQueued: 1)
        let ran = TestSemaphore()
        var caller: (SerialQueue, TestSemaphore)?
        var producer: (SerialQueue, TestSemaphore)?
        queue.sync {
            caller = onAThreadOfItsOwn("a46-room-b") { queue.sync {} }
            #expect(eventually { queue.statistics.syncWaits == 1 }, "caller B did not queue its turn")
            producer = onAThreadOfItsOwn("a46-room-p") { queue.async { ran.signal() } }
            #expect(eventually { queue._roomWaiters == 1 }, "producer P did not wait for room")
        }
        #expect(caller?.1.wait(timeout: .seconds(10)) == true, "caller B never got its turn")
        let admitted = producer?.1.wait(timeout: .seconds(5)) == true
        #expect(admitted, "producer P still waits for room in an empty queue after the pass (\(queue._roomWaiters) waiting)")
        if admitted {
            #expect(ran.wait(timeout: .seconds(10)), "P's item never ran")
        }
        // Leave no thread blocked in the queue if P was not admitted: delayed work (never held
        // back) falls due and makes the worker take the FIFO, which wakes P.
        if !admitted {
            queue.asyncAfter(delay: .milliseconds(1)) {}
            #expect(producer?.1.wait(timeout: .seconds(10)) == true, "P was not admitted after the worker took the FIFO either")
            _ = ran.wait(timeout: .seconds(10))
        }
    }

    // MARK: FIFO order under mixed traffic

    /// One item's record: tickets from one global counter taken just before its call began and
    /// once it had entered the queue (after `async` returned, or at its `sync` body's start), and
    /// the position at which it ran.
    struct Record {
        var begin: Int
        var entered: Int
    }

    /// "`body` starts after all work that entered the queue before this call, from any thread,
    /// has finished, and before any work that enters after it. Nothing else of this queue runs
    /// while it runs." Four threads: two calling `sync` in a loop (passes between them), one
    /// mixing `async` and `sync`, one awaiting into an actor on the queue; delayed work falling
    /// due throughout. Checked: for every X that had entered before Y's call began, X ran first;
    /// one body at a time; `sync` bodies on their caller's thread; exact counts at quiescence.
    @Test(arguments: QueueMode.allCases) func mixedTrafficKeepsTheFIFOOrderAcrossPasses(mode: QueueMode) async {
        let queue = mode.queue(label: "a46-fifo-\(mode)")
        let tickets = Atomic<Int>(0)
        let inside = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        let wrongThread = Atomic<Int>(0)
        let ranOrder = LockedValue<[Record]>([])
        let delayedRan = Atomic<Int>(0)
        let rounds = 400
        @Sendable func ticket() -> Int { tickets.add(1, ordering: .sequentiallyConsistent).newValue }
        @Sendable func enter() {
            let now = inside.add(1, ordering: .sequentiallyConsistent).newValue
            if now > most.load(ordering: .relaxed) { most.store(now, ordering: .relaxed) }
        }
        @Sendable func leave() { inside.subtract(1, ordering: .sequentiallyConsistent) }
        let actor = Attack46Actor(queue)
        let actorDone = TestSemaphore()
        Task.detached {
            for _ in 0..<rounds / 2 {
                let begin = ticket()
                await actor.run {
                    enter()
                    ranOrder.withLock { $0.append(Record(begin: begin, entered: .max)) }
                    leave()
                }
            }
            actorDone.signal()
        }
        await offThePool {
            runThreads(3) { index in
                for round in 0..<rounds {
                    let begin = ticket()
                    if index == 2 && round % 2 == 0 {
                        let slot = LockedValue<Int>(0)
                        queue.async {
                            enter()
                            let entered = slot.withLock { $0 }
                            ranOrder.withLock { $0.append(Record(begin: begin, entered: entered == 0 ? .max : entered)) }
                            leave()
                        }
                        slot.withLock { $0 = ticket() }
                        if round % 20 == 0 {
                            queue.asyncAfter(delay: .microseconds(50 * (round % 7))) {
                                enter()
                                delayedRan.add(1, ordering: .relaxed)
                                leave()
                            }
                        }
                    } else {
                        let thread = CurrentThreadID.value
                        queue.sync {
                            enter()
                            if CurrentThreadID.value != thread || !queue.isCurrent { wrongThread.add(1, ordering: .relaxed) }
                            let entered = ticket()
                            ranOrder.withLock { $0.append(Record(begin: begin, entered: entered)) }
                            leave()
                        }
                    }
                }
            }
        }
        #expect(await offThePool { actorDone.wait(timeout: .seconds(30)) }, "the actor's task did not finish")
        let delayedCount = rounds / 20
        #expect(await eventually { delayedRan.load(ordering: .relaxed) == delayedCount }, "delayed work did not all run")
        queue.sync {}
        let records = ranOrder.withLock { $0 }
        // For X run after Y: X must not have entered before Y's call began.
        var latestBegin = Int.min
        var violations = 0
        for record in records {
            if record.entered < latestBegin { violations += 1 }
            latestBegin = max(latestBegin, record.begin)
        }
        #expect(violations == 0, "\(violations) items ran after work whose call began after they had entered")
        #expect(most.load(ordering: .relaxed) == 1, "two bodies of the queue ran at once")
        #expect(wrongThread.load(ordering: .relaxed) == 0, "a sync body ran off its caller's thread, or not as current")
        #expect(records.count == 3 * rounds + rounds / 2)
        let figures = queue.statistics
        #expect(figures.executed == figures.submitted, "\(figures)")
    }

    // MARK: Suspension

    /// "called from the queue's own work, nothing after the current piece starts … Calls nest:
    /// each needs its own `resume()`." A body suspends twice and returns with B's turn next; a
    /// thread resumes once, then again. B must start only after the second resume.
    @Test(arguments: QueueMode.allCases) func nestedSuspensionsFromABodyHoldThePassUntilTheLastResume(mode: QueueMode) {
        let queue = mode.queue(label: "a46-nest-\(mode)")
        for _ in 0..<50 {
            let resumes = Atomic<Int>(0)
            let seen = Atomic<Int>(-1)
            var caller: (SerialQueue, TestSemaphore)?
            let waits = queue.statistics.syncWaits
            queue.sync {
                caller = onAThreadOfItsOwn("a46-nest-b") { queue.sync { seen.store(resumes.load(ordering: .sequentiallyConsistent), ordering: .relaxed) } }
                #expect(eventually { queue.statistics.syncWaits == waits + 1 }, "caller B did not queue its turn")
                queue.suspend()
                queue.suspend()
            }
            let resumer = onAThreadOfItsOwn("a46-nest-r") {
                resumes.store(1, ordering: .sequentiallyConsistent)
                queue.resume()
                resumes.store(2, ordering: .sequentiallyConsistent)
                queue.resume()
            }
            #expect(resumer.1.wait(), "the resumer did not finish")
            #expect(caller?.1.wait() == true, "caller B never got its turn")
            #expect(seen.load(ordering: .relaxed) == 2, "B started before the last resume (saw \(seen.load(ordering: .relaxed)) resumes)")
        }
        let figures = queue.statistics
        #expect(figures.executed == figures.submitted, "\(figures)")
    }

    /// `suspend()` from another thread racing passes: "Stops the queue from starting more work
    /// until a matching `resume()`. Work already running finishes." Two threads call `sync` in a
    /// loop; a third suspends, counts the bodies that start in the next 2 ms (at most the one it
    /// may have been granted just before), and resumes. Every body is counted as it starts.
    @Test(arguments: QueueMode.allCases) func suspendFromAnotherThreadStopsThePassChain(mode: QueueMode) {
        let queue = mode.queue(label: "a46-race-\(mode)")
        let started = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let worst = Atomic<Int>(0)
        runThreads(3) { index in
            if index < 2 {
                while !stop.load(ordering: .relaxed) {
                    queue.sync { _ = started.add(1, ordering: .sequentiallyConsistent) }
                }
            } else {
                for _ in 0..<40 {
                    queue.suspend()
                    let before = started.load(ordering: .sequentiallyConsistent)
                    var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
                    nanosleep(&pause, nil)
                    let after = started.load(ordering: .sequentiallyConsistent)
                    if after - before > worst.load(ordering: .relaxed) { worst.store(after - before, ordering: .relaxed) }
                    queue.resume()
                    nanosleep(&pause, nil)
                }
                stop.store(true, ordering: .relaxed)
            }
        }
        #expect(worst.load(ordering: .relaxed) <= 1, "\(worst.load(ordering: .relaxed)) bodies started while the queue was suspended")
        let figures = queue.statistics
        #expect(figures.executed == figures.submitted, "\(figures)")
    }

    // MARK: Shutdown and release

    /// "`.drain`: Run everything already enqueued"; "`.cancelPending`: … waiting `sync` callers
    /// still run"; shutdown handlers after the drain. A body holds the queue while callers queue
    /// turns (and `async` items between them), then another thread shuts the queue down while the
    /// body returns: every caller gets its turn in order, handlers run after the last body.
    @Test(arguments: QueueMode.allCases, [ShutdownMode.drain, .cancelPending])
    func shutdownRacingAChainOfPassesLetsEveryCallerRun(mode: QueueMode, shutdownMode: ShutdownMode) {
        for round in 0..<20 {
            let queue = mode.queue(label: "a46-shut-\(mode)")
            let log = LockedValue<[Int]>([])
            let handled = TestSemaphore()
            let subscription = queue.whenShutDown { _ in
                log.withLock { $0.append(-1) }
                handled.signal()
            }
            var callers: [(SerialQueue, TestSemaphore)] = []
            let release = TestSemaphore()
            let holder = onAThreadOfItsOwn("a46-shut-a") {
                queue.sync {
                    log.withLock { $0.append(0) }
                    _ = release.wait()
                }
            }
            #expect(eventually { queue.isCurrent == false && queue.statistics.syncWaits == 0 && log.withLock { $0 } == [0] })
            for caller in 1...4 {
                callers.append(onAThreadOfItsOwn("a46-shut-\(caller)") { queue.sync { log.withLock { $0.append(caller) } } })
                #expect(eventually { queue.statistics.syncWaits == caller }, "caller \(caller) did not queue its turn")
                queue.async { log.withLock { $0.append(100 + caller) } }
            }
            let shutter = onAThreadOfItsOwn("a46-shutter") {
                if round % 2 == 0 { release.signal() }
                queue.shutdown(shutdownMode)
            }
            if round % 2 == 1 { release.signal() }
            #expect(holder.1.wait(), "the holder never returned")
            for (_, done) in callers { #expect(done.wait(), "a sync caller never got its turn") }
            #expect(shutter.1.wait(), "shutdown never returned")
            #expect(handled.wait(), "the shutdown handler never ran")
            let entries = log.withLock { $0 }
            let expected: [Int] =
                shutdownMode == .drain
                ? [0, 1, 101, 2, 102, 3, 103, 4, 104, -1]
                : [0] + [1, 2, 3, 4].filter { entries.contains($0) } + [-1]
            #expect(entries.filter { $0 < 100 } == [0, 1, 2, 3, 4, -1], "round \(round): \(entries)")
            if shutdownMode == .drain { #expect(entries == expected, "round \(round): \(entries)") }
            let figures = queue.statistics
            #expect(figures.executed + figures.dropped == figures.submitted, "\(figures)")
            _ = subscription
        }
    }

    /// The last reference released while a chain of passes runs: every caller runs, the queue's
    /// deinit waits for the drain, nothing hangs.
    @Test(arguments: QueueMode.allCases) func releaseDuringAChainOfPassesDrainsAndFreesTheQueue(mode: QueueMode) {
        for _ in 0..<20 {
            let ran = Atomic<Int>(0)
            let release = TestSemaphore()
            var callers: [(SerialQueue, TestSemaphore)] = []
            weak var weakQueue: SerialQueue?
            do {
                let queue = mode.queue(label: "a46-rel-\(mode)")
                weakQueue = queue
                let inside = TestSemaphore()
                let holder = onAThreadOfItsOwn("a46-rel-a") {
                    queue.sync {
                        inside.signal()
                        _ = release.wait()
                    }
                }
                callers.append(holder)
                #expect(inside.wait(), "the holder never entered")
                for caller in 1...3 {
                    callers.append(onAThreadOfItsOwn("a46-rel-\(caller)") { queue.sync { _ = ran.add(1, ordering: .relaxed) } })
                    #expect(eventually { queue.statistics.syncWaits == caller }, "caller \(caller) did not queue its turn")
                }
            }
            release.signal()
            for (_, done) in callers { #expect(done.wait(), "a caller never returned") }
            #expect(ran.load(ordering: .relaxed) == 3)
            #expect(eventually { weakQueue == nil }, "the queue was not freed")
        }
    }

    // MARK: The wait graph

    /// "Not called from work already running on this queue, directly or through other queues'
    /// `sync` (that would deadlock, so it traps naming the chain)". T1's body on `a` passes the
    /// queue to T2; T2's body calls `b.sync` while T3, holding `b`, calls `a.sync`: a real cycle,
    /// closed across a pass. It must trap naming both holds.
    @Test(arguments: QueueMode.allCases) func aCycleClosedAcrossAPassTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let a = mode.queue(label: "a46-cyc-a")
            let b = mode.queue(label: "a46-cyc-b")
            let t2InA = TestSemaphore()
            let t3InB = TestSemaphore()
            // Kept alive outside the body: releasing T2's queue there would join its thread.
            let t2 = LockedValue<(SerialQueue, TestSemaphore)?>(nil)
            withWatchdog(timeout: .seconds(20), "the cycle closed across a pass was not detected") {
                a.sync {
                    t2.withLock { $0 = onAThreadOfItsOwn("a46-cyc-t2") {
                        a.sync {
                            t2InA.signal()
                            _ = t3InB.wait()
                            b.sync {}
                        }
                    } }
                    _ = eventually { a.statistics.syncWaits == 1 }
                }
                _ = t2InA.wait()
                b.sync {
                    t3InB.signal()
                    var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
                    nanosleep(&pause, nil)
                    a.sync {}
                }
            }
        }.map {
            let text = $0.standardErrorText
            #expect(text.contains("sync would deadlock"), "\(text)")
            #expect(text.contains("\"a46-cyc-a\" and waits for \"a46-cyc-b\""), "\(text)")
            #expect(text.contains("holds \"a46-cyc-b\" and waits for \"a46-cyc-a\""), "\(text)")
        }
    }

    /// The same queues taken in one order on every thread (`a.sync { b.sync {} }`, `a` alone,
    /// `b` alone) while passes hand both around: no cycle exists, so nothing may trap.
    @Test(arguments: QueueMode.allCases) func nestedSyncInOneOrderAcrossPassesNeverTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .success) { [mode] in
            let a = mode.queue(label: "a46-ord-a")
            let b = mode.queue(label: "a46-ord-b")
            withWatchdog(timeout: .seconds(60), "nested sync in one order hung") {
                runThreads(4) { index in
                    for round in 0..<500 {
                        switch (index + round) % 3 {
                        case 0: a.sync { b.sync {} }
                        case 1: a.sync {}
                        default: b.sync { a.async {} }
                        }
                    }
                }
            }
            let figures = (a.statistics, b.statistics)
            a.sync {}
            if figures.1.executed != figures.1.submitted { exit(3) }
        }
    }

    // MARK: Pools

    /// A pool thread blocks in `sync` behind a body on another thread (its stand-in keeps the
    /// pool's width), on a one-thread pool: the body passes it the queue; the queue's other work
    /// and another queue of the pool still run.
    @Test func aPoolThreadWaitingInSyncIsPassedTheQueueOnAOneThreadPool() {
        let pool = WorkerPool(threads: 1, label: "a46-one")
        let q = SerialQueue(label: "a46-one-q", pool: pool)
        let r = SerialQueue(label: "a46-one-r", pool: pool)
        let s = SerialQueue(label: "a46-one-s", pool: pool)
        for _ in 0..<30 {
            let log = LockedValue<[Int]>([])
            let done = TestSemaphore()
            let release = TestSemaphore()
            let holder = onAThreadOfItsOwn("a46-one-a") {
                q.sync {
                    log.withLock { $0.append(0) }
                    _ = release.wait()
                }
            }
            #expect(eventually { log.withLock { $0 } == [0] })
            let waits = q.statistics.syncWaits
            r.async {
                q.sync { log.withLock { $0.append(1) } }
                done.signal()
            }
            #expect(eventually { q.statistics.syncWaits == waits + 1 }, "the pool thread did not queue its turn")
            let other = TestSemaphore()
            s.async { other.signal() }
            #expect(other.wait(timeout: .seconds(10)), "the pool lost its width while its thread waits in sync")
            q.async { log.withLock { $0.append(2) } }
            release.signal()
            #expect(holder.1.wait(), "the holder never returned")
            #expect(done.wait(), "the pool thread never got its turn")
            q.sync {}
            #expect(log.withLock { $0 } == [0, 1, 2])
        }
        let figures = q.statistics
        #expect(figures.executed == figures.submitted, "\(figures)")
        pool.shutdown()
    }
}

/// An actor whose executor is a queue: its jobs are `QueueWork.job` items of that queue.
actor Attack46Actor {
    let queue: SerialQueue
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }

    init(_ queue: SerialQueue) { self.queue = queue }

    func touch() {}

    func run(_ body: @Sendable () -> Void) { body() }
}
