import Glibc
import SerialCore
import SerialTestSupport
import Synchronization
import Testing

/// Attack 43 on the stall watchdog's fixes of 7ef66b0 (StallWatchdog's doc: "reports, once per
/// stall, any queue whose running work has not finished within `runningThreshold`, or whose
/// oldest waiting item has not started within `waitingThreshold`"; `SerialQueueInDepth.md`: "The
/// watchdog reports each stall once"; the fix's own words: "the wait left is timed from the drop
/// (a lower bound)", "the rest now waits since its batch was taken, one stall"). Real threads,
/// every wait bounded; where time must pass, the watchdog's own looks count it (1 ms each).
///
/// Tests marked "reproduced" show a finding and run only with `ATTACK43_REPRODUCE=1`.
@Suite("Attack 43: the stall watchdog after 7ef66b0", .onItsOwnThread)
struct Attack43Tests {
    typealias Reports = StallWatchdogTests.Reports

    static var reproduce: Bool { getenv("ATTACK43_REPRODUCE") != nil }

    /// Waits until `watchdog` made `count` more looks.
    static func looks(_ count: Int, of watchdog: StallWatchdog) -> Bool {
        StallWatchdogAttackTests.looks(count, of: watchdog)
    }

    // MARK: A drop that leaves the oldest item in place

    /// "The wait left is timed from the drop (a lower bound)" (7ef66b0) against "reports, once per
    /// stall": a `sync` turn S waits behind a long item and is reported as waiting; then a later
    /// closure z enters, and `shutdown(.cancelPending)` drops z — not S, which stays the oldest
    /// waiting item and keeps waiting. S's wait is one stall, reported once.
    ///
    /// Seen: the drop restarts the oldest-waiting time even though the dropped item was not the
    /// oldest (`QueueCounters.dropped`: any drop with items left sets `oldestEnteredAt = now`), so
    /// S's one continuing wait gets a new identity and is reported a second time one threshold
    /// later, its duration counted from the drop.
    /// Fixed (issue 39's session): a drop re-times the wait only when it dropped the oldest item.
    @Test(arguments: QueueMode.allCases)
    func aSyncTurnWaitingBehindALongItemIsReportedOnceWhenALaterItemIsDropped(mode: QueueMode) {
        let waiting = Self.reportsOfASyncTurnAcrossADropBehindIt(mode)
        #expect(
            waiting.count == 1,
            "\(mode): S waited without a break from its entry to the long item's end (one stall); reported \(waiting.count) times: \(waiting.map(\.description))")
    }

    /// The same drop, where the dropped item *is* the oldest: the wait left is a new one (at
    /// least one report; the fix's rule). Kept enabled: what 7ef66b0 promised.
    @Test(arguments: QueueMode.allCases)
    func aWaitingStallIsStillReportedAfterTheOldestItemIsDropped(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(3600), waitingThreshold: .milliseconds(100), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let q = StallWatchdogAttackTests.queue(mode, label: "a43-drop-old-\(mode)")
        watchdog.watch(q)
        let started = TestSemaphore()
        let release = TestSemaphore()
        let syncReturned = TestSemaphore()
        let shutDown = TestSemaphore()
        q.async {
            started.signal()
            _ = release.wait(timeout: .seconds(60))
        }
        #expect(started.wait(timeout: .seconds(20)))
        q.async {}  // the oldest waiting item, dropped below
        OwnThread.start {
            q.sync {}
            syncReturned.signal()
        }
        #expect(eventually(timeout: .seconds(20)) { q.statistics.syncWaits == 1 }, "the sync caller never queued its turn")
        OwnThread.start {
            q.shutdown(.cancelPending)
            shutDown.signal()
        }
        #expect(eventually(timeout: .seconds(20)) { q.statistics.dropped == 1 }, "the closure was not dropped")
        let before = reports.all.count
        #expect(
            eventually(timeout: .seconds(20)) { reports.all.dropFirst(before).contains { $0.kind == .waiting } },
            "the sync turn left waiting behind the long item after the drop was never reported")
        release.signal()
        #expect(syncReturned.wait(timeout: .seconds(20)), "the sync caller never returned")
        #expect(shutDown.wait(timeout: .seconds(20)), "the shutdown never returned")
    }

    static func reportsOfASyncTurnAcrossADropBehindIt(_ mode: QueueMode) -> [StallWatchdog.Stall] {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(3600), waitingThreshold: .milliseconds(100), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let q = StallWatchdogAttackTests.queue(mode, label: "a43-drop-\(mode)")
        watchdog.watch(q)
        let started = TestSemaphore()
        let release = TestSemaphore()
        let syncReturned = TestSemaphore()
        let shutDown = TestSemaphore()
        q.async {
            started.signal()
            _ = release.wait(timeout: .seconds(60))
        }
        #expect(started.wait(timeout: .seconds(20)))
        // Reports of the long item's own start (a slow machine) are none of S's.
        let before = reports.all.count
        OwnThread.start {
            q.sync {}  // S: the oldest waiting item from here on
            syncReturned.signal()
        }
        #expect(eventually(timeout: .seconds(20)) { q.statistics.syncWaits == 1 }, "the sync caller never queued its turn")
        q.async {}  // z, behind S
        #expect(
            eventually(timeout: .seconds(20)) { reports.all.dropFirst(before).contains { $0.kind == .waiting } },
            "S waiting behind the long item was never reported")
        OwnThread.start {
            q.shutdown(.cancelPending)  // drops z; S stays, still waiting
            shutDown.signal()
        }
        #expect(eventually(timeout: .seconds(20)) { q.statistics.dropped == 1 }, "z was not dropped")
        #expect(Self.looks(1_000, of: watchdog), "the watchdog stopped looking")  // 10 thresholds
        let waiting = reports.all.dropFirst(before).filter { $0.kind == .waiting }
        release.signal()
        #expect(syncReturned.wait(timeout: .seconds(20)), "the sync caller never returned")
        #expect(shutDown.wait(timeout: .seconds(20)), "the shutdown never returned")
        return Array(waiting)
    }

    // MARK: The rest of a batch handed to a sync caller, taken again

    /// "The rest now waits since its batch was taken, one stall" (7ef66b0, for a pooled turn that
    /// hands the queue to a `sync` caller). A batch [S, b, c]: S's body runs long (b and c wait:
    /// reported once), then b runs long with c behind it. c never started from the batch's take to
    /// b's end. On a dedicated queue the worker keeps its batch across the hand-off: c's wait is
    /// one stall, reported once (the control, enabled).
    @Test func theRestOfABatchWaitingBehindASyncBodyThenALongItemIsReportedOnce() {
        let waiting = Self.reportsOfABatchRestAcrossASyncBody(.dedicated)
        #expect(waiting.count == 1, "dedicated: \(waiting.map(\.description))")
    }

    /// The same on a pooled queue. Seen: when the sync body returns, the queue's next turn takes
    /// [b, c] as a new batch (`batchTakenAt` = now), so c's wait behind b gets a new
    /// oldest-waiting time and is reported a second time, timed from the re-take; the dedicated
    /// queue reports the same work once. (Arguable as attack 42's case was: by the detector's
    /// "once per oldest item", the oldest waiting item changed from b to c when b started; then
    /// the dedicated queue is the one that stays silent. Either way the modes disagree.)
    @Test(.disabled(if: !Attack43Tests.reproduce, "finding of attack 43: the pooled re-take of a batch's rest re-times its wait (reported twice; dedicated once)"))
    func theRestOfABatchWaitingBehindASyncBodyThenALongItemIsReportedOnceOnAPooledQueue() {
        let waiting = Self.reportsOfABatchRestAcrossASyncBody(.pooled)
        #expect(waiting.count == 1, "pooled: c waited from the batch's take to b's end (one stall): \(waiting.map(\.description))")
    }

    static func reportsOfABatchRestAcrossASyncBody(_ mode: QueueMode) -> [StallWatchdog.Stall] {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(3600), waitingThreshold: .milliseconds(100), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let q = StallWatchdogAttackTests.queue(mode, label: "a43-rest-\(mode)")
        watchdog.watch(q)
        let firstStarted = TestSemaphore()
        let go = TestSemaphore()
        let bodyStarted = TestSemaphore()
        let bodyRelease = TestSemaphore()
        let bStarted = TestSemaphore()
        let bRelease = TestSemaphore()
        let cRan = TestFlag()
        let syncReturned = TestSemaphore()
        q.async {
            firstStarted.signal()
            _ = go.wait(timeout: .seconds(60))
        }
        #expect(firstStarted.wait(timeout: .seconds(20)))
        OwnThread.start {
            q.sync {
                bodyStarted.signal()
                _ = bodyRelease.wait(timeout: .seconds(60))
            }
            syncReturned.signal()
        }
        #expect(eventually(timeout: .seconds(20)) { q.statistics.syncWaits == 1 }, "the sync caller never queued its turn")
        q.async {
            bStarted.signal()
            _ = bRelease.wait(timeout: .seconds(60))
        }
        q.async { cRan.set() }
        // Waits reported while the first item ran (the FIFO [S, b, c] behind it) are another stall.
        #expect(Self.looks(20, of: watchdog), "the watchdog stopped looking")
        go.signal()
        #expect(bodyStarted.wait(timeout: .seconds(20)), "the sync body never started")
        let before = reports.all.count
        #expect(
            eventually(timeout: .seconds(20)) { reports.all.dropFirst(before).contains { $0.kind == .waiting } },
            "b and c waiting behind the sync body were never reported")
        bodyRelease.signal()
        #expect(syncReturned.wait(timeout: .seconds(20)), "the sync caller never returned")
        #expect(bStarted.wait(timeout: .seconds(20)), "b never started")
        #expect(Self.looks(1_000, of: watchdog), "the watchdog stopped looking")  // 10 thresholds
        let waiting = reports.all.dropFirst(before).filter { $0.kind == .waiting }
        let cStarted = cRan.isSet
        bRelease.signal()
        q.sync {}
        #expect(!cStarted, "c started while b ran")
        return Array(waiting)
    }

    // MARK: Suspension

    /// A queue suspended from inside its own item with a long item still to come: the batch's rest
    /// goes back to the FIFO ("waiting since its batch was taken"). Then the queue is resumed and
    /// the long item b runs with c behind. Promise ("once per stall"): every report names a wait
    /// that really went on that long (a lower bound: `duration` never exceeds the time since the
    /// oldest item that was waiting entered), in both modes.
    @Test(arguments: QueueMode.allCases)
    func aSuspendedAndResumedBatchNeverReportsAWaitLongerThanItsItemsWaited(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(3600), waitingThreshold: .milliseconds(100), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let q = StallWatchdogAttackTests.queue(mode, label: "a43-susp-\(mode)")
        watchdog.watch(q)
        let gate = TestSemaphore()
        let gateStarted = TestSemaphore()
        let bStarted = TestSemaphore()
        let bRelease = TestSemaphore()
        q.async {
            gateStarted.signal()
            _ = gate.wait(timeout: .seconds(60))
        }
        #expect(gateStarted.wait(timeout: .seconds(20)))
        let enteredAt = monotonicNow()
        q.async { q.suspend() }  // a: suspends its own queue
        q.async {
            bStarted.signal()
            _ = bRelease.wait(timeout: .seconds(60))
        }
        q.async {}  // c
        gate.signal()
        #expect(eventually(timeout: .seconds(20)) { q.statistics.executed == 2 }, "a never ran")
        #expect(Self.looks(300, of: watchdog), "the watchdog stopped looking")
        q.resume()
        #expect(bStarted.wait(timeout: .seconds(20)), "b never started after the resume")
        #expect(Self.looks(300, of: watchdog), "the watchdog stopped looking")
        let now = monotonicNow()
        bRelease.signal()
        q.sync {}
        for stall in reports.all where stall.kind == .waiting {
            #expect(
                stall.duration <= .nanoseconds(Int64(now - enteredAt)),
                "\(mode): reported \(stall.duration) of waiting; the items entered \(Duration.nanoseconds(Int64(now - enteredAt))) before the end")
        }
        #expect(reports.all.contains { $0.kind == .waiting }, "\(mode): items suspended for 300 ms were not reported waiting")
    }

    // MARK: Nested sync and hops between pooled queues

    /// A pooled queue p's sync body blocks in a nested `sync` onto another pooled queue r whose
    /// item runs long: p is running (its body, on the caller's thread); r is running (on a pool
    /// thread). Promise: each reported once as running, p naming the caller's thread, r the pool
    /// thread running its item; neither named with the other's thread. (p entered idle through
    /// the lock-free door while the watchdog was awake, so its thread may be unknown, `nil`: the
    /// documented limit.)
    @Test func aNestedSyncOntoABusyPooledQueueReportsEachQueueOnItsOwnThread() {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(100), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let pool = WorkerPool(threads: 2, label: "a43-nest")
        let p = SerialQueue(label: "a43-nest-p", pool: pool)
        let r = SerialQueue(label: "a43-nest-r", pool: pool)
        watchdog.watch(p)
        watchdog.watch(r)
        let rStarted = TestSemaphore()
        let rRelease = TestSemaphore()
        let rThread = Atomic<Int32>(0)
        let callerThread = Atomic<Int32>(0)
        let returned = TestSemaphore()
        r.async {
            rThread.store(CurrentThread.systemID, ordering: .relaxed)
            rStarted.signal()
            _ = rRelease.wait(timeout: .seconds(60))
        }
        #expect(rStarted.wait(timeout: .seconds(20)))
        OwnThread.start {
            callerThread.store(CurrentThread.systemID, ordering: .relaxed)
            p.sync { r.sync {} }
            returned.signal()
        }
        #expect(eventually(timeout: .seconds(20)) { r.statistics.syncWaits == 1 }, "the nested sync never queued")
        #expect(
            eventually(timeout: .seconds(20)) { Set(reports.all.map(\.queueLabel)).isSuperset(of: ["a43-nest-p", "a43-nest-r"]) },
            "p and r were not both reported: \(reports.all.map(\.description))")
        #expect(Self.looks(300, of: watchdog))
        rRelease.signal()
        #expect(returned.wait(timeout: .seconds(20)), "the nested sync never returned")
        let all = reports.all
        let pReports = all.filter { $0.queueLabel == "a43-nest-p" && $0.kind == .running }
        let rReports = all.filter { $0.queueLabel == "a43-nest-r" && $0.kind == .running }
        #expect(pReports.count == 1 && [nil, callerThread.load(ordering: .relaxed)].contains(pReports.first?.threadID), "p: \(pReports.map(\.description)); caller \(callerThread.load(ordering: .relaxed))")
        #expect(rReports.count == 1 && rReports.first?.threadID == rThread.load(ordering: .relaxed), "r: \(rReports.map(\.description)); r's thread \(rThread.load(ordering: .relaxed))")
    }

    /// Hops between two pooled queues (a chain that posts to the other queue and ends its item at
    /// once, 2,000 hops) beside a watchdog with a 50 ms running threshold and 50 ms waiting
    /// threshold: no item runs or waits that long unless the machine stalls them, so every report
    /// must name a queue and a thread that existed: a running report names a pool thread, never 0.
    @Test func hopsBetweenPooledQueuesNeverReportAStallOnAnUnknownThread() {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(50), waitingThreshold: .milliseconds(50), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let pool = WorkerPool(threads: 2, label: "a43-hops")
        let a = SerialQueue(label: "a43-hop-a", pool: pool)
        let b = SerialQueue(label: "a43-hop-b", pool: pool)
        watchdog.watch(a)
        watchdog.watch(b)
        let done = TestSemaphore()
        let hops = Atomic<Int>(0)
        @Sendable func hop(_ here: SerialQueue, _ there: SerialQueue) {
            if hops.add(1, ordering: .relaxed).newValue >= 2_000 { return done.signal() }
            there.async { hop(there, here) }
        }
        a.async { hop(a, b) }
        #expect(done.wait(timeout: .seconds(60)), "the chain did not end")
        a.sync {}
        b.sync {}
        for stall in reports.all where stall.kind == .running {
            #expect(stall.threadID != nil && stall.threadID != 0, "a running stall on no thread: \(stall)")
        }
    }

    // MARK: A queue handed between sync callers; shutdown while watched

    /// `Stall.threadID`: "the thread running the queue's work". Two `sync` callers on two threads
    /// each get the queue handed to them at their turn (it is busy when they call) and each runs
    /// a long body: each body is one running stall, reported once, naming its own caller's thread.
    @Test(arguments: QueueMode.allCases)
    func syncBodiesOnTwoThreadsAreEachReportedOnTheirOwnThread(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(100), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let q = StallWatchdogAttackTests.queue(mode, label: "a43-two-\(mode)")
        watchdog.watch(q)
        let gate = TestSemaphore()
        let gateStarted = TestSemaphore()
        q.async {
            gateStarted.signal()
            _ = gate.wait(timeout: .seconds(60))
        }
        #expect(gateStarted.wait(timeout: .seconds(20)))
        let threads = LockedValue<[Int32]>([0, 0])
        let releases = [TestSemaphore(), TestSemaphore()]
        let started = [TestSemaphore(), TestSemaphore()]
        let returned = TestSemaphore()
        for index in 0..<2 {
            OwnThread.start {
                threads.withLock { $0[index] = CurrentThread.systemID }
                q.sync {
                    started[index].signal()
                    _ = releases[index].wait(timeout: .seconds(60))
                }
                returned.signal()
            }
            #expect(eventually(timeout: .seconds(20)) { q.statistics.syncWaits == index + 1 }, "caller \(index) never queued its turn")
        }
        gate.signal()
        for index in 0..<2 {
            #expect(started[index].wait(timeout: .seconds(20)), "body \(index) never started")
            let before = reports.all.count
            #expect(
                eventually(timeout: .seconds(20)) { reports.all.dropFirst(before).contains { $0.kind == .running } },
                "body \(index) was never reported running")
            #expect(Self.looks(200, of: watchdog))
            let running = reports.all.dropFirst(before).filter { $0.kind == .running }
            #expect(
                running.count == 1 && running.first?.threadID == threads.withLock { $0[index] },
                "\(mode): body \(index) on thread \(threads.withLock { $0[index] }): \(running.map(\.description))")
            releases[index].signal()
            #expect(returned.wait(timeout: .seconds(20)))
        }
        q.sync {}
    }

    /// A watched queue shut down with `.cancelPending` while a long item runs and items wait
    /// (reported as waiting): the dropped items are never reported again, nothing is reported
    /// after the queue exited, and the watchdog (watching nothing else) goes to sleep: "a released
    /// queue is simply no longer watched"; "idle costs nothing".
    @Test(arguments: QueueMode.allCases)
    func aQueueShutDownWhileWatchedIsReportedNoMoreAndTheWatchdogSleeps(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(3600), waitingThreshold: .milliseconds(50), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        var q: SerialQueue? = StallWatchdogAttackTests.queue(mode, label: "a43-shut-\(mode)")
        watchdog.watch(q!)
        let started = TestSemaphore()
        let release = TestSemaphore()
        let shutDown = TestSemaphore()
        q!.async {
            started.signal()
            _ = release.wait(timeout: .seconds(60))
        }
        #expect(started.wait(timeout: .seconds(20)))
        for _ in 0..<5 { q!.async {} }
        #expect(eventually(timeout: .seconds(20)) { reports.all.contains { $0.kind == .waiting } }, "the waiting items were not reported")
        let queue = q!
        OwnThread.start {
            queue.shutdown(.cancelPending)
            shutDown.signal()
        }
        #expect(eventually(timeout: .seconds(20)) { queue.statistics.dropped == 5 }, "the items were not dropped")
        let afterDrop = reports.all.count
        #expect(Self.looks(200, of: watchdog), "the watchdog stopped looking")
        #expect(reports.all.count == afterDrop, "\(mode): reported after the drop: \(reports.all.dropFirst(afterDrop).map(\.description))")
        release.signal()
        #expect(shutDown.wait(timeout: .seconds(20)), "the shutdown never returned")
        q = nil
        #expect(eventually(timeout: .seconds(20)) { watchdog._isAsleep }, "\(mode): the watchdog kept looking after its only queue shut down")
        #expect(reports.all.count == afterDrop, "\(mode): reported after the shutdown: \(reports.all.dropFirst(afterDrop).map(\.description))")
    }

    // MARK: WorkerPool (f300b91) on real threads

    /// WorkerPool: "other work made runnable while a thread is free goes to the pool's run queue
    /// at once, waking an idle thread unless a spinning one will look"; f300b91: a watcher that
    /// steals a `next` queue wakes an idle thread for the run-queue work it was counted on for.
    /// On 3 threads, x's item leaves c in its `next` slot, and both x's and c's items go on until y
    /// ran; y becomes runnable from outside the pool a few spins after c's fill, while a free
    /// thread may watch c's slot. Before f300b91 the watcher could steal c and leave y with the
    /// third thread asleep: x and c would wait for y until their cap (30 s). Each round: y runs
    /// within 10 s (no speed measured). 300 rounds, or ATTACK43_ROUNDS.
    @Test func runQueueWorkBesideAWatcherThatStealsRunsOnRealThreads() {
        let rounds = getenv("ATTACK43_ROUNDS").flatMap { Int(String(cString: $0)) } ?? 300
        let pool = WorkerPool(threads: 3, label: "a43-steal")
        var late: [Int] = []
        for round in 0..<rounds {
            let x = SerialQueue(label: "a43-steal-x", pool: pool)
            let c = SerialQueue(label: "a43-steal-c", pool: pool)
            let y = SerialQueue(label: "a43-steal-y", pool: pool)
            let posted = TestFlag()
            let yRan = TestFlag()
            let finished = TestSemaphore()
            @Sendable func untilYRan() {
                _ = eventually(timeout: .seconds(30)) { yRan.isSet }
                finished.signal()
            }
            x.async {
                c.async { untilYRan() }
                posted.set()
                untilYRan()
            }
            #expect(eventually(timeout: .seconds(20)) { posted.isSet }, "round \(round): x's item never posted c")
            var spins = 0
            for _ in 0..<(round % 7) * 200 { spins &+= Int(monotonicNow() & 1) }
            y.async { yRan.set() }
            if !eventually(timeout: .seconds(10), { yRan.isSet }) { late.append(round) }
            #expect(finished.wait(timeout: .seconds(40)) && finished.wait(timeout: .seconds(40)), "round \(round): x's or c's item did not end")
            x.sync {}
            c.sync {}
            y.sync {}
            _ = spins
        }
        pool.shutdown()
        #expect(late.isEmpty, "y did not run within 10 s while x's and c's items waited for it, with the pool's third thread: rounds \(late)")
    }
}
