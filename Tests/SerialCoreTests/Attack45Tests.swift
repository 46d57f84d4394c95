@testable import SerialCore
import Glibc
import SerialTestSupport
import Synchronization
import Testing

/// Attack 45 on the promises touched by b637dc6, 0b009fe, 02777bf and attack 43's fixes: sampled
/// waits (`QueueCounters`: `returned`, `dropped`, the watchdog's stamps), due delayed work waking
/// an armed watchdog (`QueueCore.moveDueDelayedWork`), and the unretained pool and `PoolWorker` on
/// the hop's path.
///
/// Real threads: nothing assumes how fast a thread runs; every wait is bounded and fails with a
/// message. The watchdog's reports are checked against what the test saw: a waiting report of
/// `d` made at `t` is "not too early" when some item entered the queue no later than `t - d` and
/// had not started at `t`.
@Suite("Attack 45: sampled waits, due work and the watchdog, unretained hops", .onItsOwnThread)
struct Attack45Tests {
    static let patience = Duration.seconds(60)
    static var scale: Int { max(1, getenv("ATTACK45_SCALE").flatMap { Int(String(cString: $0)) } ?? 1) }
    static var reproduce: Bool { getenv("ATTACK45_REPRODUCE").map { String(cString: $0) == "1" } ?? false }

    /// The reports of a watchdog, with the time each was made (monotonic nanoseconds).
    final class Reports: Sendable {
        struct Entry: Sendable, CustomStringConvertible {
            var stall: StallWatchdog.Stall
            var at: UInt64
            var nanoseconds: UInt64 { UInt64(clamping: self.stall.duration.saturatingNanoseconds) }
            var description: String { "\(self.stall.kind) \(self.stall.queueLabel) \(self.nanoseconds / 1_000_000) ms at \(self.at / 1_000_000) ms" }
        }
        private let entries = Locked<[Entry]>([])
        private let arrived = TestSemaphore()

        func record(_ stall: StallWatchdog.Stall) {
            let entry = Entry(stall: stall, at: monotonicNow())
            self.entries.withLock { $0.append(entry) }
            self.arrived.signal()
        }

        var all: [Entry] { self.entries.withLock { $0 } }

        func waiting(_ label: String, after: UInt64 = 0) -> [Entry] {
            self.all.filter { $0.stall.kind == .waiting && $0.stall.queueLabel == label && $0.at >= after }
        }

        /// Waits until `condition` holds of the reports, for at most `timeout`.
        func waitFor(timeout: Duration, _ condition: ([Entry]) -> Bool) -> Bool {
            let limit = monotonicNow() + UInt64(timeout.components.seconds) * 1_000_000_000
            while !condition(self.all) {
                let left = limit > monotonicNow() ? limit - monotonicNow() : 0
                if left == 0 { return condition(self.all) }
                _ = self.arrived.wait(timeout: .nanoseconds(Int64(min(left, 50_000_000))))
            }
            return true
        }
    }

    static func watchdog(_ reports: Reports, waiting: Duration, interval: Duration, running: Duration = .seconds(600))
        -> StallWatchdog
    {
        StallWatchdog(runningThreshold: running, waitingThreshold: waiting, checkInterval: interval) { reports.record($0) }
    }

    static func makeQueue(_ label: String, pool: WorkerPool?) -> SerialQueue {
        pool.map { SerialQueue(label: label, pool: $0) } ?? SerialQueue(label: label)
    }

    // MARK: 1. A pooled sync hand-off that returns nothing of its batch

    /// `QueueCounters.returned` (b637dc6): "Items put back at the front of the FIFO … have waited
    /// since their batch was taken". A pooled turn that reaches a `sync` turn hands the queue over
    /// and returns the rest of its batch; when the sync turn was the batch's last item, nothing
    /// comes back, and the FIFO holds only items that entered *after* the batch was taken. Their
    /// wait began at their entry (timed here: `watched`), and must go on from there.
    /// On 5625e6f: 10 of 10 runs failed (deterministic): X's wait counted from the batch's take.
    /// Fixed: `returned` is told how many items came back; none, and the FIFO's own wait goes on.
    @Test func aHandOffThatReturnsNothingKeepsTheWaitOfItemsThatEnteredAfterTheBatch() {
        var counters = QueueCounters()
        counters.entered(depth: 1, watched: true)  // item B
        counters.entered(depth: 2, watched: true)  // B's sync turn behind it
        counters.batchTaken(2, remaining: 0, progress: 0)  // a timed batch [B, sync turn]
        let batchTakenAt = counters.batchTakenAt
        var spin = 0
        while monotonicNow() <= batchTakenAt + 1_000 { spin += 1 }  // the clock moves on (1 µs)
        counters.entered(depth: 1, watched: true)  // X enters the empty FIFO while B runs: timed
        let xEnteredAt = counters.oldestEnteredAt
        #expect(xEnteredAt > batchTakenAt, "X's wait is timed from its entry")
        counters.returned(0, depth: 1)  // the hand-off: nothing of the batch is left to return
        #expect(
            counters.oldestEnteredAt == xEnteredAt,
            "X entered at \(xEnteredAt), after the batch (taken at \(batchTakenAt)); its wait now counts from \(counters.oldestEnteredAt) (\(Int64(bitPattern: xEnteredAt &- counters.oldestEnteredAt)) ns early)")
        counters.batchTaken(1, remaining: 0, progress: 2)
        #expect(counters.waitTime.count == 2, "\(counters.waitTime)")
    }

    /// End to end, the same path. `StallWatchdog`: each oldest item's wait is reported once, and
    /// "a wait at or above threshold is reported within threshold + about two check intervals".
    /// A batch [B, sync turn] is taken; the sync turn waits behind B and is reported (threshold
    /// 100 ms). Then B queues X and ends; the sync body holds the queue. X's wait is a new wait:
    /// it must be reported once it reaches 100 ms. Pooled: the hand-off returns nothing, and
    /// `returned` sets X's start to the batch's time, which the watchdog has already reported:
    /// X is never reported (a waiting stall of 3 s missed). Dedicated: no return (control).
    /// On 5625e6f: pooled 12 of 12 runs failed ("waiting reports after it entered: []"), dedicated
    /// 0 of 12. Not new in b637dc6 (the old `returned` did the same for a timed batch). Had the
    /// watchdog not reported the sync turn first, X would have been reported too early instead
    /// (timed from the batch, before X entered). Fixed with the test above.
    @Test(arguments: [false, true])
    func aWaitBegunBehindASyncHandOffIsReported(pooled: Bool) {
        let reports = Reports()
        let watchdog = Self.watchdog(reports, waiting: .milliseconds(100), interval: .milliseconds(5))
        let pool = pooled ? WorkerPool(threads: 1, label: "a45-ho-pool") : nil
        let q = Self.makeQueue("a45-ho", pool: pool)
        watchdog.watch(q)
        let bStarted = TestSemaphore()
        let xSubmitted = Locked<UInt64>(0)
        let bodyDone = TestSemaphore()
        let xWaitReported = Locked<[Reports.Entry]>([])
        q.suspend()
        q.async {
            let start = monotonicNow()
            bStarted.signal()
            // The sync turn, behind B in the batch, waits: wait for its report.
            if !reports.waitFor(timeout: Self.patience, { $0.contains { $0.stall.kind == .waiting && $0.at >= start } }) {
                Issue.record("the sync turn waiting behind B was not reported within 60 s: \(reports.all)")
            }
            xSubmitted.withLock { $0 = monotonicNow() }
            q.async {}  // X: enters the empty FIFO while B runs
        }
        startThread {
            q.sync {
                // X waits while this body holds the queue: until it is reported (at most 3 s).
                let since = xSubmitted.withLock { $0 }
                _ = reports.waitFor(timeout: .seconds(3)) { entries in
                    entries.contains { $0.stall.kind == .waiting && $0.at >= since }
                }
                xWaitReported.withLock { $0 = reports.waiting("a45-ho", after: since) }
            }
            bodyDone.signal()
        }
        #expect(eventually(timeout: Self.patience) { q.statistics.syncWaits == 1 }, "the sync caller did not queue")
        q.resume()
        #expect(bStarted.wait(timeout: Self.patience), "B did not start")
        #expect(bodyDone.wait(timeout: Self.patience), "the sync body did not end")
        q.sync {}
        watchdog.stop()
        let since = xSubmitted.withLock { $0 }
        let xReports = xWaitReported.withLock { $0 }
        #expect(
            xReports.count == 1,
            "X waited behind the sync body (threshold 100 ms, up to 3 s); waiting reports after it entered: \(xReports); all: \(reports.all)")
        for entry in xReports {
            #expect(entry.at - since >= entry.nanoseconds, "too early: \(entry), X entered at \(since / 1_000_000) ms")
        }
        pool?.shutdown()
    }

    // MARK: 2. Due delayed work on a suspended pooled queue

    /// `StallWatchdog` "Limits": "Delayed work is an item once it has fallen due and entered the
    /// FIFO; on a suspended dedicated queue it enters when the queue resumes". A pooled queue is
    /// not named there, and b637dc6 says due work on a suspended pool's queue is now reported. Here
    /// the pooled queue is suspended *before* `asyncAfter` (the attack 44 scenario scheduled first):
    /// the watchdog sleeps armed on it, the work falls due after 20 ms, and the test waits 2 s for
    /// a waiting report (threshold 100 ms). On 5625e6f: 12 of 12 runs unreported, `depth` 0: a
    /// suspended pooled queue never armed the pool's timer (`schedulePooled`, the end of a turn,
    /// `delayedWorkFellDue` all skipped it), so its due work stayed in the delayed heap, while work
    /// scheduled before the suspension entered the FIFO at its deadline. Fixed: a pooled queue arms
    /// its timer suspended or not; `StallWatchdog` "Limits" says so.
    @Test
    func dueWorkScheduledOnAnAlreadySuspendedPooledQueueIsReported() {
        let reports = Reports()
        let watchdog = Self.watchdog(reports, waiting: .milliseconds(100), interval: .milliseconds(5))
        let pool = WorkerPool(threads: 1, label: "a45-susp-pool")
        let q = SerialQueue(label: "a45-susp", pool: pool)
        watchdog.watch(q)
        #expect(eventually(timeout: Self.patience) { watchdog._isAsleep }, "the watchdog did not sleep over an idle queue")
        q.suspend()
        let ran = TestSemaphore()
        _ = q.asyncAfter(delay: .milliseconds(20)) { ran.signal() }
        let reported = reports.waitFor(timeout: .seconds(2)) { !$0.isEmpty }
        let depth = q.statistics.depth
        q.resume()
        #expect(ran.wait(timeout: Self.patience), "the due work did not run after resume")
        watchdog.stop()
        #expect(
            reported,
            "due work on a suspended pooled queue waited 2 s (threshold 100 ms) unreported; depth \(depth), watchdog asleep: \(watchdog._isAsleep)")
        pool.shutdown()
    }

    /// Suspend and resume racing due delayed work and a watchdog going to sleep, pooled and
    /// dedicated, 200 rounds: each due item runs once; every waiting report is a lower bound (made
    /// no earlier than its duration after the item's deadline); counts exact at the end.
    @Test(arguments: [false, true])
    func suspendAndResumeRacingDueWorkAndAWatch(pooled: Bool) {
        let reports = Reports()
        let watchdog = Self.watchdog(reports, waiting: .milliseconds(2), interval: .milliseconds(1))
        let pool = pooled ? WorkerPool(threads: 1, label: "a45-sr-pool") : nil
        let q = Self.makeQueue("a45-sr", pool: pool)
        let ran = TestCounter()
        let deadlines = Locked<[UInt64]>([])
        let rounds = 200 * Self.scale
        for round in 0..<rounds {
            if round % 3 == 0 { watchdog.watch(q) }
            let due = MonotonicInstant.now().advanced(by: .microseconds(Int64(round % 7) * 100))
            deadlines.withLock { $0.append(due.nanoseconds) }
            _ = q.asyncAfter(deadline: due) { _ = ran.increment() }
            runThreads(2) { index in
                if index == 0 {
                    q.suspend()
                    for _ in 0..<((round % 5) * 100) { _ = monotonicNow() }  // jitter: the order of events varies
                    q.resume()
                } else if round % 3 == 1 {
                    watchdog.stopWatching(q)
                }
            }
        }
        #expect(eventually(timeout: Self.patience) { ran.value == rounds }, "\(ran.value) of \(rounds) due items ran")
        q.sync {}
        watchdog.stop()
        let figures = q.statistics
        #expect(figures.submitted == figures.executed + figures.dropped + figures.depth && figures.depth == 0, "\(figures)")
        let earliest = deadlines.withLock { $0.min() ?? 0 }
        for entry in reports.waiting("a45-sr") {
            #expect(entry.at >= earliest + entry.nanoseconds, "a waiting report longer than any item could have waited: \(entry)")
        }
        pool?.shutdown()
    }

    // MARK: 3. A cancelling shutdown while a pooled hand-off has returned an untimed rest

    /// `QueueStatistics`: "the counts are exact"; `shutdown(.cancelPending)` drops async work
    /// that has not started and reports it. A batch [A, sync turn, C1…C5] (untimed: the queue's
    /// second wait) is taken; A blocks; the sync turn's hand-off returns [C1…C5] untimed; the sync
    /// body then holds the queue while another thread shuts it down with `.cancelPending`. The five
    /// are dropped, counted once, and a watchdog (threshold 20 ms) reports no wait too early.
    @Test(arguments: 0..<5)
    func aCancellingShutdownAfterAHandOffReturnedAnUntimedRest(round: Int) {
        let reports = Reports()
        let pool = WorkerPool(threads: 1, label: "a45-cp-pool")
        let q = SerialQueue(label: "a45-cp", pool: pool)
        q.sync {}  // not an item
        q.async {}
        q.sync {}  // the first wait: timed; the next one is not
        let watchdog = Self.watchdog(reports, waiting: .milliseconds(20), interval: .milliseconds(2))
        if round % 2 == 1 { watchdog.watch(q) }
        let releaseA = TestSemaphore()
        let inBody = TestSemaphore()
        let releaseBody = TestSemaphore()
        let bodyDone = TestSemaphore()
        let ranC = TestCounter()
        let submittedAt = monotonicNow()
        let syncWaitsBefore = q.statistics.syncWaits  // the warm-up sync may have waited
        q.suspend()
        q.async { _ = releaseA.wait(timeout: Self.patience) }
        startThread {
            q.sync {
                inBody.signal()
                _ = releaseBody.wait(timeout: Self.patience)
            }
            bodyDone.signal()
        }
        #expect(eventually(timeout: Self.patience) { q.statistics.syncWaits == syncWaitsBefore + 1 }, "the sync caller did not queue")
        for _ in 0..<5 { q.async { _ = ranC.increment() } }
        q.resume()
        releaseA.signal()
        #expect(inBody.wait(timeout: Self.patience), "the sync body did not start")
        let shutDown = TestSemaphore()
        let report = Locked<ShutdownReport?>(nil)
        startThread {
            let value = q.shutdown(.cancelPending)
            report.withLock { $0 = value }
            shutDown.signal()
        }
        #expect(eventually(timeout: Self.patience) { q.isShutDown }, "the shutdown did not begin")
        releaseBody.signal()
        #expect(bodyDone.wait(timeout: Self.patience), "the sync body did not end")
        #expect(shutDown.wait(timeout: Self.patience), "the shutdown did not return")
        watchdog.stop()
        let figures = q.statistics
        let dropped = report.withLock { $0?.cancelledWork } ?? -1
        #expect(ranC.value + dropped == 5, "ran \(ranC.value), dropped \(dropped)")
        #expect(figures.dropped == dropped, "\(figures) vs dropped \(dropped)")
        #expect(figures.submitted == figures.executed + figures.dropped + figures.depth && figures.depth == 0, "\(figures)")
        for entry in reports.waiting("a45-cp") {
            #expect(entry.at >= submittedAt + entry.nanoseconds, "too early: \(entry), first item at \(submittedAt / 1_000_000) ms")
        }
        pool.shutdown()
    }

    // MARK: 4. stopWatching racing a due-work wake

    /// `StallWatchdog.stopWatching`: "it is no longer armed to wake this watchdog"; a queue no
    /// longer watched is not reported. The watchdog sleeps armed on q; q's delayed work falls due
    /// (waking it from q's lock, 0b009fe) while another thread stops watching q. After each round:
    /// q is not armed for the watchdog; no report names q after `stopWatching` returned (q then
    /// holds a 5 ms item: threshold 1 ms, interval 1 ms).
    @Test(arguments: [false, true])
    func stopWatchingRacingADueWorkWake(pooled: Bool) {
        let reports = Reports()
        let watchdog = Self.watchdog(reports, waiting: .milliseconds(1), interval: .milliseconds(1), running: .milliseconds(1))
        let pool = pooled ? WorkerPool(threads: 1, label: "a45-sw-pool") : nil
        let q = Self.makeQueue("a45-sw", pool: pool)
        let other = Self.makeQueue("a45-sw-other", pool: pool)
        watchdog.watch(other)  // keeps the watchdog's set non-empty
        let rounds = 100 * Self.scale
        for round in 0..<rounds {
            watchdog.watch(q)
            guard eventually(timeout: Self.patience, { watchdog._isAsleep && q._isArmed(for: watchdog) }) else {
                Issue.record("round \(round): the watchdog did not sleep armed on q within 60 s")
                break
            }
            let ran = TestSemaphore()
            _ = q.asyncAfter(delay: .microseconds(Int64(round % 10) * 50)) { ran.signal() }
            let stoppedAt = Locked<UInt64>(0)
            runThreads(1) { _ in
                watchdog.stopWatching(q)
                stoppedAt.withLock { $0 = monotonicNow() }
            }
            #expect(ran.wait(timeout: Self.patience), "round \(round): the due work did not run")
            q.sync {}
            // A look under way when stopWatching ran disarms q as it ends: wait for one more look.
            let looks = watchdog._lookCount
            other.async {}
            _ = eventually(timeout: .seconds(5)) { watchdog._lookCount > looks + 1 || watchdog._isAsleep }
            let armed = q._isArmed(for: watchdog)
            #expect(!armed, "round \(round): q is still armed for a watchdog that stopped watching it")
            let after = stoppedAt.withLock { $0 }
            let looksBefore = watchdog._lookCount
            q.sync {
                // q held past the thresholds while the watchdog looks three times (or sleeps: then
                // it cannot report q either).
                _ = eventually(timeout: .seconds(5)) { watchdog._lookCount >= looksBefore + 3 || watchdog._isAsleep }
            }
            let late = reports.all.filter { $0.stall.queueLabel == "a45-sw" && $0.at > after + 2_000_000 }
            #expect(late.isEmpty, "round \(round): reports of q after stopWatching returned: \(late)")
            if !late.isEmpty || armed { break }
        }
        watchdog.stop()
        pool?.shutdown()
    }

    // MARK: 5. Many queues on a one-thread pool, due work while the thread is busy

    /// `StallWatchdog`: every watched queue "whose oldest waiting item has not started within
    /// `waitingThreshold`" is reported, once, never too early. 50 pooled queues on a one-thread
    /// pool, all watched; the watchdog sleeps armed on them; each gets delayed work due in 20 ms
    /// while an unwatched queue holds the pool's only thread. Each due item waits far beyond the
    /// threshold (100 ms): the blocker holds until all 50 are reported (at most 20 s).
    @Test func dueWorkOfManyQueuesOnABusyOneThreadPoolIsReportedOncePerQueue() {
        let reports = Reports()
        let watchdog = Self.watchdog(reports, waiting: .milliseconds(100), interval: .milliseconds(10))
        let pool = WorkerPool(threads: 1, label: "a45-many-pool")
        let queues = (0..<50).map { SerialQueue(label: "a45-many-\($0)", pool: pool) }
        let blocker = SerialQueue(label: "a45-many-blocker", pool: pool)
        for queue in queues { watchdog.watch(queue) }
        #expect(eventually(timeout: Self.patience) { watchdog._isAsleep }, "the watchdog did not sleep over idle queues")
        let ran = TestCounter()
        let due = MonotonicInstant.now().advanced(by: .milliseconds(20))
        let holding = TestSemaphore()
        let labels = Set(queues.map(\.label))
        blocker.async {
            holding.signal()
            _ = reports.waitFor(timeout: .seconds(20)) { entries in
                Set(entries.filter { $0.stall.kind == .waiting }.map(\.stall.queueLabel)).isSuperset(of: labels)
            }
        }
        #expect(holding.wait(timeout: Self.patience), "the blocker did not start")
        for queue in queues { _ = queue.asyncAfter(deadline: due) { _ = ran.increment() } }
        #expect(eventually(timeout: Self.patience) { ran.value == 50 }, "\(ran.value) of 50 due items ran")
        watchdog.stop()
        let waiting = reports.all.filter { $0.stall.kind == .waiting }
        let byQueue = Dictionary(grouping: waiting, by: \.stall.queueLabel)
        let missing = labels.subtracting(byQueue.keys)
        #expect(missing.isEmpty, "\(missing.count) of 50 queues' due work was never reported: \(missing.sorted().prefix(5))")
        let twice = byQueue.filter { $0.value.count > 1 }
        #expect(twice.isEmpty, "reported more than once: \(twice.mapValues { $0.map(\.description) })")
        for entry in waiting {
            #expect(entry.at >= due.nanoseconds + entry.nanoseconds, "too early: \(entry), due at \(due.nanoseconds / 1_000_000) ms")
        }
        pool.shutdown()
    }

    // MARK: 6. Counts after thousands of hops with drops

    /// `QueueStatistics`: "the counts are exact" (`submitted == executed + dropped + depth`;
    /// `dropped` what `.cancelPending` reported). 8 pooled queues on 2 threads; chains hop among
    /// them with `tryAsync`, pthreads `sync` into them (hand-offs return rests), and each queue in
    /// turn is suspended, filled and shut down with `.cancelPending` while the hops go on.
    @Test(arguments: [1, 2])
    func countsStayExactAcrossThousandsOfHopsWithDrops(threads: Int) {
        let pool = WorkerPool(threads: threads, label: "a45-cnt-pool")
        let queues = (0..<8).map { SerialQueue(label: "a45-cnt-\($0)", pool: pool) }
        let closuresRan = TestCounter()
        // Counted before each submission (and taken back when refused): with nothing in flight,
        // `closuresRan + dropped == submitted`.
        let submitted = TestCounter()
        let hops = 1_000 * Self.scale
        @Sendable func hop(_ index: Int, _ left: Int) {
            _ = closuresRan.increment()
            guard left > 0 else { return }
            let next = queues[(index &* 5 &+ left) % queues.count]
            submitted.increment()
            do {
                try next.tryAsync { hop(index, left - 1) }
            } catch {
                submitted.increment(by: -1)
            }
        }
        for chain in 0..<8 {
            submitted.increment()
            queues[chain].async { hop(chain, hops) }
        }
        let syncBodies = TestCounter()
        runThreads(3) { index in
            if index < 2 {
                for call in 0..<300 {
                    let queue = queues[(2 * call + 2 * index) % queues.count]  // even: never shut down
                    queue.sync { _ = syncBodies.increment() }
                }
            } else {
                // The drops come while the chains hop (half their hops are still to come).
                if !eventually(timeout: Self.patience, { closuresRan.value >= 4 * hops }) {
                    Issue.record("the chains did not make \(4 * hops) hops within 60 s (\(closuresRan.value))")
                }
                for (position, queue) in queues.enumerated() where position % 2 == 1 {
                    queue.suspend()
                    for _ in 0..<10 {
                        submitted.increment()
                        do { try queue.tryAsync { _ = closuresRan.increment() } } catch { submitted.increment(by: -1) }
                    }
                    let report = queue.shutdown(.cancelPending)
                    queue.resume()
                    let figures = queue.statistics
                    #expect(figures.dropped == report.cancelledWork, "\(queue.label): \(figures) vs \(report)")
                }
            }
        }
        let settled = eventually(timeout: Self.patience) {
            closuresRan.value + queues.reduce(0) { $0 + $1.statistics.dropped } == submitted.value
        }
        let dropped = queues.reduce(0) { $0 + $1.statistics.dropped }
        #expect(settled, "ran \(closuresRan.value) + dropped \(dropped) != submitted \(submitted.value) after 60 s")
        for queue in queues where !queue.isShutDown { queue.sync {} }
        pool.shutdown()
        for queue in queues {
            let figures = queue.statistics
            #expect(figures.submitted == figures.executed + figures.dropped + figures.depth && figures.depth == 0, "\(queue.label): \(figures)")
        }
        let executed = queues.reduce(0) { $0 + $1.statistics.executed }
        #expect(syncBodies.value == 600)
        #expect(executed <= closuresRan.value + syncBodies.value, "executed \(executed) > \(closuresRan.value) closures + \(syncBodies.value) sync bodies")
        #expect(closuresRan.value >= 4 * hops, "only \(closuresRan.value) closures ran")
        #expect(closuresRan.value + dropped == submitted.value, "ran \(closuresRan.value), dropped \(dropped), submitted \(submitted.value)")
    }

    // MARK: 7. Releases during hops, with the pool shut down meanwhile

    /// The unretained pool (`QueueCore.perform`) and `PoolWorker` on the hop's path (02777bf):
    /// a pooled queue released from inside its own turn while a hop into it from another queue of
    /// the pool is in flight, and the pool shut down from a pthread meanwhile. Each hop runs or is
    /// refused; no crash. Its real target is AddressSanitizer and ThreadSanitizer.
    @Test func queuesReleasedInsideTheirTurnsWhileThePoolShutsDown() {
        for round in 0..<(40 * Self.scale) {
            let pool = WorkerPool(threads: 1 + round % 2, label: "a45-rel")
            let sink = SerialQueue(label: "a45-rel-sink", pool: pool)
            let ran = TestCounter()
            let refused = TestCounter()
            let settled = TestSemaphore()
            let items = 20
            for item in 0..<items {
                let box = Locked<SerialQueue?>(SerialQueue(label: "a45-rel-\(item % 4)", pool: pool))
                let queue = box.withLock { $0! }
                let accepted = (try? queue.tryAsync {
                    let mine = box.withLock { value -> SerialQueue? in
                        defer { value = nil }
                        return value
                    }
                    do {
                        try sink.tryAsync {
                            _ = ran.increment()
                            settled.signal()
                        }
                    } catch {
                        _ = refused.increment()
                        settled.signal()
                    }
                    _ = mine  // the last reference of this queue, dropped inside its own turn
                }) != nil
                if !accepted {
                    _ = refused.increment()
                    settled.signal()
                }
            }
            runThreads(1) { _ in pool.shutdown() }
            for item in 0..<items {
                guard settled.wait(timeout: Self.patience) else {
                    Issue.record("round \(round): item \(item) of \(items) neither ran nor was refused within 60 s")
                    return
                }
            }
            #expect(ran.value + refused.value == items, "round \(round): \(ran.value) ran, \(refused.value) refused")
            #expect(pool.queueCount == 0, "round \(round): \(pool.queueCount) queues left attached")
        }
    }

    // MARK: 8. The flake of PostFixAttackTests.threeWatchdogsRacingWatchAndStopWatchingEachEndArmedAndReport

    /// `StallDetector`: "a running stall is reported at most once per progress value". A dedicated
    /// worker that finished an item (the count moved to 8) and then waited for its queue's lock (or
    /// was descheduled) for over the threshold before ending its batch is seen running at 8 for
    /// that long, and reported; the queue then goes idle. Its next item runs at 8 too, since no
    /// other item finished: before the fix that stall was never reported (`reportedProgress` was
    /// still 8). Seen in the flaky test below: every watchdog had reported "running at executed 8"
    /// earlier in the round, and the long item ran at executed 8. On 5625e6f: 10 of 10 runs failed.
    /// Fixed: a look that finds the queue not running forgets the reported count as well.
    @Test func aRunningStallAfterAnIdleSpellAtTheSameCountIsReported() {
        var detector = StallDetector(runningThreshold: .milliseconds(5), waitingThreshold: .seconds(3600))
        func sample(running: Bool) -> StallSample {
            StallSample(
                label: "q", isRunning: running, progress: 8, oldestWaitingSince: 0, waitingItems: 0, runningThread: 1,
                workerThread: 1)
        }
        let ms: UInt64 = 1_000_000
        var reports = detector.observe(sample(running: true), now: 0)
        reports += detector.observe(sample(running: true), now: 6 * ms)  // the gap: reported
        #expect(reports.count == 1)
        #expect(detector.observe(sample(running: false), now: 7 * ms).isEmpty)  // idle
        var later: [StallWatchdog.Stall] = []
        for tick in 8...40 { later += detector.observe(sample(running: true), now: UInt64(tick) * ms) }  // the long item
        #expect(later.count == 1, "a 32 ms run at the count of an earlier reported stretch was reported \(later.count) times")
    }

    /// A copy of `PostFixAttackTests.threeWatchdogsRacingWatchAndStopWatchingEachEndArmedAndReport`
    /// that says why a watchdog missed q's running stall: each report carries q's `executed`
    /// count when it was made, and the long item records the count it runs at. A running stall is
    /// reported "at most once per progress value" (`StallDetector`); if a running report of q
    /// earlier in the round was made at the count the long item runs at, that is why it is not
    /// reported. Only with ATTACK45_REPRODUCE=1 (it fails only on a loaded machine).
    ///
    /// Seen under ThreadSanitizer with two busy loops (`yes > /dev/null`) on the 2 cores: the
    /// original test failed 14 of 91 repetitions on 5625e6f (each time dedicated, each time q's
    /// stall missed by all three watchdogs while all three reported the new queue's); this copy
    /// missed in 2 of 40 repetitions, both times "long item at executed 8; earlier reports of q:
    /// running at executed 8" for all three watchdogs. So not a test that assumes timing but a
    /// detector bug that the load exposes: the worker is seen running at the count reached by its
    /// last item while it waits for the queue's lock (three watchdogs look every microsecond) or is
    /// descheduled before ending its batch; over 5 ms of that is reported, and then the long item,
    /// at the same count, was not. With the detector fixed: 0 of 91 repetitions of the original.
    @Test(.enabled(if: Self.reproduce), arguments: QueueMode.allCases)
    func whyAWatchdogMissesQsRunningStallAfterTheRace(mode: QueueMode) {
        let pool = WorkerPool(threads: 2, label: "a45-race-pool")
        @Sendable func makeQueue(_ label: String) -> SerialQueue {
            mode == .pooled ? SerialQueue(label: label, pool: pool) : SerialQueue(label: label)
        }
        let label = "a45-race-\(mode)"
        let rounds = getenv("ATTACK45_ROUNDS").flatMap { Int(String(cString: $0)) } ?? 20
        for round in 0..<rounds {
            let q = makeQueue(label)
            // (report, q's executed count when it was made)
            let reports = (0..<3).map { _ in Locked<[(StallWatchdog.Stall, Int)]>([]) }
            let watchdogs = (0..<3).map { index in
                StallWatchdog(
                    runningThreshold: .milliseconds(5), waitingThreshold: .seconds(3600), checkInterval: .microseconds(1)
                ) { stall in
                    let executed = stall.queueLabel == label ? q.statistics.executed : -1
                    reports[index].withLock { $0.append((stall, executed)) }
                }
            }
            let other = Locked<SerialQueue?>(makeQueue("a45-race-other"))
            runThreads(4) { thread in
                for step in 0..<100 {
                    let watchdog = watchdogs[(thread + step) % 3]
                    switch (thread * 7 + step) % 4 {
                    case 0: watchdog.watch(q)
                    case 1: watchdog.stopWatching(q)
                    case 2:
                        if thread == 0 {
                            let old = other.withLock { queue in defer { queue = nil }; return queue }
                            _ = consume old
                            let fresh = makeQueue("a45-race-other")
                            watchdog.watch(fresh)
                            other.withLock { $0 = fresh }
                        } else {
                            watchdog.watch(q)
                        }
                    default:
                        if step % 16 == 3 { q.async {} }
                        if let o = other.withLock({ $0 }) { watchdog.stopWatching(o) }
                    }
                }
            }
            for watchdog in watchdogs { watchdog.watch(q) }
            q.sync {}
            let asleep = eventually(timeout: .seconds(20)) { watchdogs.allSatisfy { $0._isAsleep && q._isArmed(for: $0) } }
            #expect(asleep, "round \(round): not every watchdog fell asleep armed on q")
            let before = reports.map { $0.withLock { $0.count } }
            let release = TestSemaphore()
            let longRunsAt = Locked<Int>(-1)
            q.async {
                longRunsAt.withLock { $0 = q.statistics.executed }
                _ = release.wait(timeout: .seconds(30))
            }
            let reported = eventually(timeout: .seconds(20)) {
                (0..<3).allSatisfy { index in
                    reports[index].withLock { $0.dropFirst(before[index]).contains { $0.0.kind == .running && $0.0.queueLabel == label } }
                }
            }
            release.signal()
            q.sync {}
            for watchdog in watchdogs { watchdog.stop() }
            let at = longRunsAt.withLock { $0 }
            let earlier = (0..<3).map { index in
                reports[index].withLock { $0.prefix(before[index]).filter { $0.0.queueLabel == label }.map { "\($0.0.kind) at executed \($0.1)" } }
            }
            #expect(
                reported,
                "round \(round): q's running stall (its long item runs at executed \(at)) was not reported by every watchdog; their earlier reports of q this round: \(earlier)")
            if !reported {
                print("a45-race \(mode) round \(round): missed; long item at executed \(at); earlier reports of q: \(earlier)")
                break
            }
        }
        pool.shutdown()
    }
}

/// A plain detached pthread running `body` (blocking bodies never run on Swift's cooperative threads).
private func startThread(_ body: @escaping @Sendable () -> Void) {
    let box = Unmanaged.passRetained(A45ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { argument in
        Unmanaged<A45ThreadBody>.fromOpaque(argument!).takeRetainedValue().run()
        return nil
    }, box)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    pthread_detach(thread)
}

private final class A45ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

