import Glibc
import SerialCore
import SerialTestSupport
import Synchronization
import Testing

/// An attack on `StallWatchdog`'s promises (its doc comments and SerialQueueInDepth's watchdog
/// paragraph): a stall reported once, never twice, never missed; idle costs nothing; armed queues
/// wake it; several watchdogs on one queue; watch/stopWatching/stop racing a look; queues released
/// while watched, armed or looked at; `sync` on an armed queue; pooled queues; a report closure
/// that calls back into the watchdog. Timing is held by the look hook and gates; where time must
/// pass, another watchdog's looks count it (`LookClock`). Every wait has a timeout.
@Suite("StallWatchdog attack", .onItsOwnThread)
struct StallWatchdogAttackTests {
    typealias Reports = StallWatchdogTests.Reports

    /// A clock made of looks: a watchdog looking every millisecond at a queue kept busy, so
    /// `wait(looks:)` returns once at least that many milliseconds passed, with no sleep.
    final class LookClock: Sendable {
        let watchdog = StallWatchdog(runningThreshold: .seconds(3600), checkInterval: .milliseconds(1)) { _ in }
        let queue = SerialQueue(label: "look-clock")
        let release = TestSemaphore()

        init() {
            let release = self.release
            self.watchdog.watch(self.queue)
            self.queue.async { _ = release.wait(timeout: .seconds(60)) }
        }

        /// At least `looks` milliseconds passed (false: the clock stopped for 20 s).
        func wait(looks: Int) -> Bool {
            let start = self.watchdog._lookCount
            return eventually(timeout: .seconds(20)) { self.watchdog._lookCount >= start + looks }
        }

        func stop() {
            self.release.signal()
            self.queue.sync {}
            self.watchdog.stop()
        }
    }

    /// A queue in `mode`; a pooled one on a pool of its own. On the shared three-thread test pool
    /// this suite's blocked items waited for each other's threads (seen under --repetitions 10
    /// on a loaded machine: a stalled item that never started is no running stall).
    static func queue(_ mode: QueueMode, label: String) -> SerialQueue {
        switch mode {
        case .dedicated: SerialQueue(label: label)
        case .pooled: SerialQueue(label: label, pool: WorkerPool(threads: 2, label: "att-pool"))
        }
    }

    /// Waits until `watchdog` made `count` more looks.
    static func looks(_ count: Int, of watchdog: StallWatchdog) -> Bool {
        let start = watchdog._lookCount
        return eventually(timeout: .seconds(20)) { watchdog._lookCount >= start + count }
    }

    // MARK: Once per stall, never missed

    /// A running stall is reported once however many looks see it, and the queue's next stall
    /// is a new one, reported once too.
    @Test(arguments: QueueMode.allCases)
    func aRunningStallIsReportedOnceAndTheNextOneAgain(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-run-\(mode)")
        watchdog.watch(queue)
        for round in 1...3 {
            let release = TestSemaphore()
            queue.async { _ = release.wait(timeout: .seconds(30)) }
            #expect(reports.arrived.wait(timeout: .seconds(20)), "round \(round): the running stall was not reported")
            #expect(Self.looks(40, of: watchdog), "round \(round): the watchdog stopped looking at a stalled queue")
            release.signal()
            queue.sync {}
            #expect(reports.all.count == round, "round \(round): \(reports.all)")
        }
        #expect(reports.all.allSatisfy { $0.kind == .running && $0.queueLabel == "att-run-\(mode)" }, "\(reports.all)")
    }

    /// A waiting stall (a suspended queue) is reported once per oldest item; the next
    /// suspension's item is a new stall.
    @Test(arguments: QueueMode.allCases)
    func aWaitingStallIsReportedOncePerOldestItem(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(3600), waitingThreshold: .milliseconds(20), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-wait-\(mode)")
        watchdog.watch(queue)
        for round in 1...3 {
            queue.suspend()
            queue.async {}
            queue.async {}
            #expect(reports.arrived.wait(timeout: .seconds(20)), "round \(round): the waiting stall was not reported")
            #expect(Self.looks(40, of: watchdog), "round \(round): the watchdog stopped looking")
            queue.resume()
            queue.sync {}
            #expect(reports.all.count == round, "round \(round): \(reports.all)")
        }
        #expect(reports.all.map(\.kind) == [.waiting, .waiting, .waiting])
        #expect(reports.all.map(\.waitingItems) == [2, 2, 2])
    }

    /// Work stuck behind a long item: a running stall for the item, a waiting stall for the work
    /// behind it, each once.
    @Test(arguments: QueueMode.allCases)
    func aLongItemWithWorkQueuedBehindIsReportedAsRunningAndAsWaitingOnce(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .milliseconds(20), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        // Its own pool: on the shared test pool the long item itself may wait for a thread
        // (other tests hold them) and be reported as waiting too, rightly.
        let pool = WorkerPool(threads: 2, label: "att-both")
        let queue =
            mode == .pooled ? SerialQueue(label: "att-both-\(mode)", pool: pool) : Self.queue(mode, label: "att-both-\(mode)")
        let started = TestSemaphore()
        let release = TestSemaphore()
        queue.async {
            started.signal()
            _ = release.wait(timeout: .seconds(30))
        }
        #expect(started.wait(timeout: .seconds(20)))
        // Watched once the long item runs: on a loaded machine (AddressSanitizer, 2026-11-29) the
        // worker started it 21 ms late, and that wait was rightly reported as a third stall.
        watchdog.watch(queue)
        queue.async {}  // enters the FIFO while the long item runs
        #expect(reports.arrived.wait(timeout: .seconds(20)), "no first report")
        #expect(reports.arrived.wait(timeout: .seconds(20)), "no second report")
        #expect(Self.looks(40, of: watchdog))
        release.signal()
        queue.sync {}
        #expect(Set(reports.all.map(\.kind)) == [.running, .waiting] && reports.all.count == 2, "\(reports.all)")
    }

    /// "whose oldest waiting item has not started within `waitingThreshold`" and `Kind.waiting`:
    /// "the queue is busy with something long". Here the item behind the long one was taken by
    /// the worker in the same batch as it (both queued while an earlier item ran): it has not
    /// started, yet it is no longer in the FIFO the watchdog samples.
    @Test(arguments: QueueMode.allCases)
    func workTakenInTheSameBatchAsALongItemIsReportedAsWaiting(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(3600), waitingThreshold: .milliseconds(20), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-batch-\(mode)")
        watchdog.watch(queue)
        let first = TestSemaphore()
        let go = TestSemaphore()
        let release = TestSemaphore()
        let behindStarted = TestFlag()
        queue.async {
            first.signal()
            _ = go.wait(timeout: .seconds(30))
        }
        #expect(first.wait(timeout: .seconds(20)))
        queue.async { _ = release.wait(timeout: .seconds(30)) }  // the long item
        queue.async { behindStarted.set() }  // waits behind it
        go.signal()
        let reported = reports.arrived.wait(timeout: .seconds(5))
        #expect(!behindStarted.isSet)
        release.signal()
        queue.sync {}
        #expect(reported, "an item waited 5 s behind a long one (threshold 20 ms): no waiting stall reported")
    }

    // MARK: Idle costs nothing

    /// Every watched queue idle: asleep, armed on each, and no look for 100 ms of another
    /// watchdog's looks.
    @Test(arguments: QueueMode.allCases)
    func anIdleSetCostsNoLooks(mode: QueueMode) {
        let clock = LookClock()
        defer { clock.stop() }
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(20), checkInterval: .milliseconds(1)) { _ in }
        defer { watchdog.stop() }
        let queues = (0..<3).map { Self.queue(mode, label: "att-idle-\(mode)-\($0)") }
        for queue in queues { watchdog.watch(queue) }
        for queue in queues { queue.sync {} }
        #expect(eventually(timeout: .seconds(20)) { watchdog._isAsleep }, "never slept over an idle set")
        let looks = watchdog._lookCount
        #expect(clock.wait(looks: 100))
        #expect(watchdog._lookCount == looks, "an idle set cost \(watchdog._lookCount - looks) looks in 100 ms")
        #expect(watchdog._isAsleep)
        #expect(queues.allSatisfy { $0._isArmed(for: watchdog) }, "an idle queue is not armed while its watchdog sleeps")
    }

    /// Stopping watching the only busy queue, or releasing it, leaves an empty (or dead) set:
    /// the watchdog must sleep rather than look every interval forever.
    @Test(arguments: QueueMode.allCases)
    func aWatchdogLeftWithNoLiveQueueSleeps(mode: QueueMode) async {
        let watchdog = StallWatchdog(runningThreshold: .seconds(3600), checkInterval: .milliseconds(1)) { _ in }
        defer { watchdog.stop() }
        let release = TestSemaphore()
        let busy = Self.queue(mode, label: "att-busy-\(mode)")
        watchdog.watch(busy)
        // The item outlasts every wait below (3 × 20 s, bounded): ended early, it would leave the
        // queue idle and the watchdog rightly asleep (CI's ThreadSanitizer pass, 2026-11-29, saw
        // the watchdog asleep after the re-watch; the test had run 55 s against a 30 s item).
        let itemEnded = TestFlag()
        busy.async {
            _ = release.wait(timeout: .seconds(120))
            itemEnded.set()
        }
        #expect(await eventually(timeout: .seconds(20)) { watchdog._lookCount > 2 && !watchdog._isAsleep })
        watchdog.stopWatching(busy)
        #expect(await eventually(timeout: .seconds(20)) { watchdog._isAsleep }, "looking forever at an empty set")
        // Released while busy: its release waits for the item, so it happens on a thread of its own.
        watchdog.watch(busy)
        #expect(
            await eventually(timeout: .seconds(20)) { !watchdog._isAsleep },
            "asleep though a busy queue is watched (its item ended: \(itemEnded.isSet))")
        let box = LockedValue<SerialQueue?>(busy)
        _ = consume busy
        let released = TestSemaphore()
        await runThreads(2) { index in
            if index == 0 {
                box.withLock { $0 = nil }  // waits until the item ran
                released.signal()
            } else {
                release.signal()
                _ = released.wait(timeout: .seconds(20))
            }
        }
        #expect(await eventually(timeout: .seconds(20)) { watchdog._isAsleep }, "looking forever at a released queue")
    }

    // MARK: Armed queues wake it

    enum WakePath: String, CaseIterable, CustomStringConvertible, Sendable {
        case async, tryAsync, sync, asyncAfter, execute, run
        var description: String { self.rawValue }
    }

    /// Asleep over an idle armed queue: each way work can reach the queue wakes the watchdog and
    /// a stall there is reported (the thread of a `sync` body included).
    @Test(arguments: QueueMode.allCases, WakePath.allCases)
    func eachWayWorkArrivesWakesASleepingWatchdog(mode: QueueMode, path: WakePath) async {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-wake-\(mode)-\(path)")
        watchdog.watch(queue)
        #expect(
            await eventually(timeout: .seconds(20)) { watchdog._isAsleep && queue._isArmed(for: watchdog) },
            "never asleep with the queue armed")
        let looks = watchdog._lookCount
        let done = TestSemaphore()
        let stall: @Sendable () -> Void = {
            _ = reports.arrived.wait(timeout: .seconds(20))
            done.signal()
        }
        let callerThread = LockedValue<Int32>(0)
        switch path {
        case .async: queue.async(stall)
        case .tryAsync: try? queue.tryAsync(stall)
        case .execute: try? queue.execute(stall)
        case .asyncAfter: _ = queue.asyncAfter(delay: .milliseconds(5), stall)
        case .sync:
            await offThePool {
                callerThread.withLock { $0 = CurrentThreadID.systemID }
                queue.sync(stall)
            }
        case .run: await queue.run(stall)
        }
        let ran = await offThePool { done.wait(timeout: .seconds(30)) }
        #expect(ran, "\(path): the work never ran")
        queue.sync {}
        #expect(watchdog._lookCount > looks, "the watchdog never woke")
        #expect(reports.all.map(\.kind) == [.running], "\(path): \(reports.all)")
        if path == .sync {
            #expect(reports.all.first?.threadID == callerThread.withLock { $0 }, "the sync caller's thread is not named")
        }
        #expect(
            await eventually(timeout: .seconds(20)) { watchdog._isAsleep && queue._isArmed(for: watchdog) },
            "\(path): idle again, the queue was not armed again before the watchdog slept")
    }

    /// A `sync` caller waiting on a suspended pooled (or dedicated) queue wakes the sleeping
    /// watchdog: a waiting stall.
    @Test(arguments: QueueMode.allCases)
    func aSyncWaitingOnASuspendedQueueIsReported(mode: QueueMode) async {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(3600), waitingThreshold: .milliseconds(20), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-susp-\(mode)")
        watchdog.watch(queue)
        #expect(await eventually(timeout: .seconds(20)) { watchdog._isAsleep && queue._isArmed(for: watchdog) })
        queue.suspend()
        await runThreads(2) { index in
            if index == 0 {
                queue.sync {}
            } else {
                #expect(reports.arrived.wait(timeout: .seconds(20)), "a sync waiting on a suspended queue went unseen")
                queue.resume()
            }
        }
        #expect(reports.all.map(\.kind) == [.waiting])
    }

    /// A pool whose only thread is held by one queue's work: the other queue's work waits,
    /// runnable but not run; both stalls are reported.
    @Test func aQueueStarvedByItsPoolIsReportedAsWaiting() {
        let pool = WorkerPool(threads: 1, label: "att-starve")
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .milliseconds(20), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let hog = SerialQueue(label: "att-hog", pool: pool)
        let starved = SerialQueue(label: "att-starved", pool: pool)
        let started = TestSemaphore()
        let release = TestSemaphore()
        hog.async {
            started.signal()
            _ = release.wait(timeout: .seconds(30))
        }
        #expect(started.wait(timeout: .seconds(20)))
        // Watched once the hog runs: its own start may come more than 20 ms late on a loaded
        // machine, a waiting stall of its own (see the test above).
        watchdog.watch(hog)
        watchdog.watch(starved)
        starved.async {}
        #expect(reports.arrived.wait(timeout: .seconds(20)))
        #expect(reports.arrived.wait(timeout: .seconds(20)))
        release.signal()
        starved.sync {}
        let seen = Set(reports.all.map { "\($0.queueLabel):\($0.kind)" })
        #expect(seen == ["att-hog:running", "att-starved:waiting"], "\(reports.all)")
    }

    // MARK: Released queues

    /// A queue released while watched and asleep is "simply no longer watched". A new queue
    /// watched afterwards (the allocator may give it the released one's memory) must be watched:
    /// armed once the watchdog sleeps, and its stall reported. The watchdog keys its set by
    /// `ObjectIdentifier` and drops released entries only when it looks; asleep, it keeps the
    /// dead entry, and `watch` of a queue at the same address finds it and does nothing.
    @Test(arguments: QueueMode.allCases)
    func aQueueWatchedAfterAnotherWasReleasedIsWatched(mode: QueueMode) {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        for round in 0..<50 {
            let queue = mode.queue(label: "att-reuse-\(mode)")
            watchdog.watch(queue)
            let armed = eventually(timeout: .seconds(5)) { watchdog._isAsleep && queue._isArmed(for: watchdog) }
            #expect(armed, "round \(round): a watched idle queue was never armed (the watchdog sleeps without it)")
            let release = TestSemaphore()
            queue.async { _ = release.wait(timeout: .seconds(30)) }
            let reported = reports.arrived.wait(timeout: .seconds(5))
            #expect(reported, "round \(round): a watched queue blocked 5 s (threshold 20 ms) was not reported")
            release.signal()
            queue.sync {}
            if !armed || !reported { return }
        }
    }

    /// Control for the test above: the same rounds with every queue kept alive (no memory to
    /// reuse) pass.
    @Test(arguments: QueueMode.allCases)
    func queuesWatchedOneAfterAnotherWhileAllLiveAreWatched(mode: QueueMode) {
        let watchdog = StallWatchdog(runningThreshold: .seconds(3600), checkInterval: .milliseconds(1)) { _ in }
        defer { watchdog.stop() }
        var kept: [SerialQueue] = []
        for round in 0..<200 {
            let queue = mode.queue(label: "att-live-\(mode)")
            kept.append(queue)
            watchdog.watch(queue)
            let armed = eventually(timeout: .seconds(5)) { watchdog._isAsleep && queue._isArmed(for: watchdog) }
            #expect(armed, "round \(round): a watched idle queue was never armed (the watchdog sleeps without it)")
            if !armed { return }
        }
    }

    /// A dedicated queue released while armed: its thread ends, and the watchdog it held stops
    /// cleanly afterwards.
    @Test func aQueueReleasedWhileArmedLeavesNoThreadAndTheWatchdogStops() {
        let label = "att-rel-\(UInt16.random(in: 0...UInt16.max))"
        let watchdog = StallWatchdog(runningThreshold: .seconds(3600), checkInterval: .milliseconds(1)) { _ in }
        do {
            let queue = SerialQueue(label: label)
            watchdog.watch(queue)
            #expect(eventually(timeout: .seconds(20)) { watchdog._isAsleep && queue._isArmed(for: watchdog) })
            // The worker names its thread as it starts, which a loaded machine may not have let it do yet.
            #expect(eventually(timeout: .seconds(20)) { currentThreadNames().contains(label) }, "the queue's worker never started")
        }
        #expect(eventually(timeout: .seconds(20)) { !currentThreadNames().contains(label) }, "a released armed queue kept its thread")
        #expect(watchdog._isAsleep)
        watchdog.stop()
    }

    // MARK: Several watchdogs on one queue

    /// Three watchdogs with different thresholds on one queue: each reports the stall once;
    /// one stops watching, one stops, the third still wakes and reports the next stall alone,
    /// and the other two are no longer armed on the queue.
    @Test(arguments: QueueMode.allCases)
    func threeWatchdogsOnOneQueueEachReportOnceAndStopOnTheirOwn(mode: QueueMode) {
        let reports = (0..<3).map { _ in Reports() }
        let dogs = (0..<3).map { index in
            StallWatchdog(
                runningThreshold: .milliseconds(20 * (index + 1)), waitingThreshold: .seconds(3600),
                checkInterval: .milliseconds(1)
            ) { reports[index].add($0) }
        }
        defer { for dog in dogs { dog.stop() } }
        let queue = Self.queue(mode, label: "att-three-\(mode)")
        for dog in dogs { dog.watch(queue) }
        #expect(eventually(timeout: .seconds(20)) { dogs.allSatisfy { $0._isAsleep && queue._isArmed(for: $0) } })
        let release = TestSemaphore()
        queue.async { _ = release.wait(timeout: .seconds(30)) }
        for index in 0..<3 {
            #expect(reports[index].arrived.wait(timeout: .seconds(20)), "watchdog \(index) did not report the stall")
        }
        for dog in dogs { #expect(Self.looks(30, of: dog)) }
        release.signal()
        queue.sync {}
        #expect(reports.map(\.all.count) == [1, 1, 1], "\(reports.map(\.all))")
        dogs[0].stopWatching(queue)
        dogs[1].stop()
        #expect(eventually(timeout: .seconds(20)) { dogs[2]._isAsleep && queue._isArmed(for: dogs[2]) })
        #expect(!queue._isArmed(for: dogs[0]), "armed for a watchdog that stopped watching it")
        #expect(!queue._isArmed(for: dogs[1]), "armed for a stopped watchdog")
        let again = TestSemaphore()
        queue.async { _ = again.wait(timeout: .seconds(30)) }
        #expect(reports[2].arrived.wait(timeout: .seconds(20)), "the remaining watchdog did not wake for the second stall")
        again.signal()
        queue.sync {}
        #expect(reports.map(\.all.count) == [1, 1, 2], "\(reports.map(\.all))")
    }

    // MARK: Released queues, stop, and a look under way

    /// A queue released while a look holds its copy (dedicated: its thread joined; pooled: the
    /// look may hold the last reference): the look ends, no crash, the watchdog sleeps.
    @Test(arguments: QueueMode.allCases)
    func aQueueReleasedDuringALookIsDroppedCleanly(mode: QueueMode) async {
        let watchdog = StallWatchdog(runningThreshold: .seconds(3600), checkInterval: .milliseconds(1)) { _ in }
        defer { watchdog.stop() }
        let box = LockedValue<SerialQueue?>(Self.queue(mode, label: "att-gone-\(mode)"))
        let failure = await StallWatchdogArmingTests.holdingALook(
            of: watchdog, begin: { box.withLock { $0 }.map { watchdog.watch($0) } }
        ) {
            let queue = box.withLock { held in
                defer { held = nil }
                return held
            }
            _ = consume queue  // the last reference outside the look
        }
        #expect(failure == nil, "\(failure ?? "")")
        #expect(await eventually(timeout: .seconds(20)) { watchdog._isAsleep }, "never slept after the released queue")
        let looks = watchdog._lookCount
        let clock = LookClock()
        #expect(clock.wait(looks: 50))
        clock.stop()
        #expect(watchdog._lookCount == looks, "kept looking at a released queue")
    }

    /// `stop()` from another thread while a look is held, with `watch` and `stopWatching` during
    /// that look: `stop` returns once the look ends, and no queue stays armed for the stopped
    /// watchdog (so their lock-free doors reopen); a `watch` after `stop` arms nothing.
    @Test(arguments: QueueMode.allCases)
    func stopDuringALookWithWatchAndStopWatchingLeavesNothingArmed(mode: QueueMode) async {
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(20), checkInterval: .milliseconds(1)) { _ in }
        let first = Self.queue(mode, label: "att-stop1-\(mode)")
        let second = Self.queue(mode, label: "att-stop2-\(mode)")
        let third = Self.queue(mode, label: "att-stop3-\(mode)")
        let other = Self.queue(mode, label: "att-stop4-\(mode)")
        watchdog.watch(other)
        #expect(await eventually(timeout: .seconds(20)) { other._isArmed(for: watchdog) })
        let sampling = TestSemaphore()
        let proceed = TestSemaphore()
        let stopped = TestSemaphore()
        let held = TestFlag()
        watchdog._setLookHook { phase in
            guard case .willSample(let queues) = phase, queues > 1, !held.isSet else { return }
            held.set()
            sampling.signal()
            _ = proceed.wait(timeout: .seconds(30))
        }
        let outcome = await offThePool { () -> String? in
            let result = LockedValue<String?>(nil)
            runThreads(2) { index in
                if index == 0 {
                    watchdog.watch(first)
                    guard sampling.wait(timeout: .seconds(20)) else {
                        result.withLock { $0 = "the watchdog never looked at two queues" }
                        proceed.signal()
                        return
                    }
                    // The stopper starts now; give it the lock-free part of stop() first.
                    stopped.signal()
                    watchdog.watch(second)
                    watchdog.stopWatching(first)
                    proceed.signal()
                } else {
                    _ = stopped.wait(timeout: .seconds(20))
                    watchdog.stop()  // waits for the held look to end
                }
            }
            return result.withLock { $0 }
        }
        #expect(outcome == nil, "\(outcome ?? "")")
        for queue in [first, second, other] {
            #expect(!queue._isArmed(for: watchdog), "\(queue.label) armed for a stopped watchdog")
        }
        watchdog.watch(third)
        #expect(!third._isArmed(for: watchdog), "a watch after stop armed the queue")
        for queue in [first, second, third, other] { queue.sync {} }
        watchdog._setLookHook(nil)
    }

    /// `stop()` and `watch()` from two threads at once, many times: whichever comes first, no
    /// queue is left armed for the stopped watchdog.
    @Test(arguments: QueueMode.allCases)
    func stopRacingWatchLeavesNothingArmed(mode: QueueMode) async {
        let queues = (0..<2).map { Self.queue(mode, label: "att-race-\(mode)-\($0)") }
        let leftArmed = await offThePool { () -> Int in
            var armed = 0
            for _ in 0..<200 {
                let watchdog = StallWatchdog(runningThreshold: .seconds(3600), checkInterval: .nanoseconds(1)) { _ in }
                watchdog.watch(queues[0])
                runThreads(2) { index in
                    if index == 0 { watchdog.stop() } else { watchdog.watch(queues[1]) }
                }
                if queues.contains(where: { $0._isArmed(for: watchdog) }) { armed += 1 }
            }
            return armed
        }
        #expect(leftArmed == 0, "\(leftArmed) of 200 stopped watchdogs left a queue armed")
    }

    // MARK: The report closure calls back

    final class Holder: @unchecked Sendable {  // set before any report
        weak var watchdog: StallWatchdog? = nil
        var queues: [SerialQueue] = []
    }

    /// The report stops watching the stalled queue: it is not armed afterwards and its next
    /// stall is not reported (100 ms of a look clock, threshold 20 ms).
    @Test(arguments: QueueMode.allCases)
    func aReportThatStopsWatchingItsQueue(mode: QueueMode) {
        let holder = Holder()
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { stall in
            holder.watchdog?.stopWatching(holder.queues[0])
            reports.add(stall)
        }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-rep-unwatch-\(mode)")
        holder.watchdog = watchdog
        holder.queues = [queue]
        watchdog.watch(queue)
        let release = TestSemaphore()
        queue.async { _ = release.wait(timeout: .seconds(30)) }
        #expect(reports.arrived.wait(timeout: .seconds(20)))
        release.signal()
        queue.sync {}
        #expect(eventually(timeout: .seconds(20)) { watchdog._isAsleep })
        #expect(!queue._isArmed(for: watchdog), "armed for a watchdog its report stopped watching it")
        let clock = LookClock()
        defer { clock.stop() }
        let again = TestSemaphore()
        queue.async { _ = again.wait(timeout: .seconds(30)) }
        #expect(clock.wait(looks: 100))
        again.signal()
        queue.sync {}
        #expect(reports.all.count == 1, "an unwatched queue was reported: \(reports.all)")
    }

    /// The report stops watching its queue and watches it again: still watched, armed once idle,
    /// and its next stall reported.
    @Test(arguments: QueueMode.allCases)
    func aReportThatStopsWatchingAndWatchesAgain(mode: QueueMode) {
        let holder = Holder()
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { stall in
            holder.watchdog?.stopWatching(holder.queues[0])
            holder.watchdog?.watch(holder.queues[0])
            reports.add(stall)
        }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-rep-rewatch-\(mode)")
        holder.watchdog = watchdog
        holder.queues = [queue]
        watchdog.watch(queue)
        for round in 1...2 {
            let release = TestSemaphore()
            queue.async { _ = release.wait(timeout: .seconds(30)) }
            #expect(reports.arrived.wait(timeout: .seconds(20)), "round \(round): no report")
            release.signal()
            queue.sync {}
            #expect(
                eventually(timeout: .seconds(20)) { watchdog._isAsleep && queue._isArmed(for: watchdog) },
                "round \(round): the re-watched queue is not armed under the sleeping watchdog")
        }
        // The re-watch restarts detection: a stall still running when watched again is new to
        // it, so a stall may be reported again per re-watch; at least one per round.
        #expect(reports.all.count >= 2, "\(reports.all)")
    }

    /// The report watches a second queue, already stalled: that stall is reported too.
    @Test(arguments: QueueMode.allCases)
    func aReportThatWatchesAnotherStalledQueue(mode: QueueMode) {
        let holder = Holder()
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { stall in
            if stall.queueLabel.hasSuffix("first") { holder.watchdog?.watch(holder.queues[1]) }
            reports.add(stall)
        }
        defer { watchdog.stop() }
        let first = Self.queue(mode, label: "att-rep-\(mode)-first")
        let second = Self.queue(mode, label: "att-rep-\(mode)-second")
        holder.watchdog = watchdog
        holder.queues = [first, second]
        let release = TestSemaphore()
        let started = TestSemaphore()
        second.async {
            started.signal()
            _ = release.wait(timeout: .seconds(30))
        }
        #expect(started.wait(timeout: .seconds(20)))
        watchdog.watch(first)
        first.async { _ = release.wait(timeout: .seconds(30)) }
        #expect(reports.arrived.wait(timeout: .seconds(20)), "the first stall was not reported")
        #expect(reports.arrived.wait(timeout: .seconds(20)), "the stall of the queue watched from the report was not reported")
        release.signal(2)
        first.sync {}
        second.sync {}
        #expect(Set(reports.all.map(\.queueLabel)) == ["att-rep-\(mode)-first", "att-rep-\(mode)-second"], "\(reports.all)")
    }

    /// The report stops the watchdog, then watches and stops watching: no crash, no further
    /// report, nothing left armed.
    @Test(arguments: QueueMode.allCases)
    func aReportThatStopsThenWatches(mode: QueueMode) {
        let holder = Holder()
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .milliseconds(20), checkInterval: .milliseconds(1)
        ) { stall in
            holder.watchdog?.stop()
            holder.watchdog?.watch(holder.queues[1])
            holder.watchdog?.stopWatching(holder.queues[0])
            reports.add(stall)
        }
        let first = Self.queue(mode, label: "att-rep-stop-\(mode)")
        let second = Self.queue(mode, label: "att-rep-stop2-\(mode)")
        holder.watchdog = watchdog
        holder.queues = [first, second]
        watchdog.watch(first)
        let release = TestSemaphore()
        first.async { _ = release.wait(timeout: .seconds(30)) }
        first.async {}  // a waiting stall too: two stalls in one look, the second must not be reported
        #expect(reports.arrived.wait(timeout: .seconds(20)))
        let clock = LookClock()
        #expect(clock.wait(looks: 50))
        clock.stop()
        release.signal()
        first.sync {}
        #expect(reports.all.count == 1, "reports after stop(): \(reports.all)")
        #expect(!first._isArmed(for: watchdog) && !second._isArmed(for: watchdog))
        holder.watchdog = nil
        watchdog.stop()
    }

    // MARK: More of "never missed", and a long report

    /// "a long report delays the next look, never a queue": while a report blocks, another
    /// watched queue (armed, so its work must wake the watchdog) takes work and `sync` at once.
    @Test(arguments: QueueMode.allCases)
    func aBlockedReportDoesNotBlockAWatchedQueue(mode: QueueMode) async {
        let inReport = TestSemaphore()
        let leaveReport = TestSemaphore()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { _ in
            inReport.signal()
            _ = leaveReport.wait(timeout: .seconds(30))
        }
        defer { watchdog.stop() }
        let stalled = Self.queue(mode, label: "att-longrep-\(mode)")
        let other = Self.queue(mode, label: "att-longrep2-\(mode)")
        watchdog.watch(stalled)
        watchdog.watch(other)
        #expect(await eventually(timeout: .seconds(20)) { watchdog._isAsleep && other._isArmed(for: watchdog) })
        let release = TestSemaphore()
        stalled.async { _ = release.wait(timeout: .seconds(30)) }
        let reporting = await offThePool { inReport.wait(timeout: .seconds(20)) }
        #expect(reporting, "no report")
        let ran = await offThePool { () -> Bool in
            let done = TestSemaphore()
            other.async { done.signal() }
            other.sync {}
            watchdog.stopWatching(other)
            watchdog.watch(other)
            return done.wait(timeout: .seconds(20))
        }
        #expect(ran, "a watched queue waited for a report")
        leaveReport.signal(10)
        release.signal()
        stalled.sync {}
    }

    /// A `sync` body that took an idle queue through its lock-free door while the watchdog was
    /// awake (the queue was busy at the last look, so not armed) and then stalls is reported.
    @Test(arguments: QueueMode.allCases)
    func aSyncBodyThatCameThroughTheDoorAndStallsIsReported(mode: QueueMode) async {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let keepAwake = Self.queue(mode, label: "att-door-busy-\(mode)")
        let queue = Self.queue(mode, label: "att-door-\(mode)")
        let releaseBusy = TestSemaphore()
        keepAwake.async { _ = releaseBusy.wait(timeout: .seconds(30)) }
        let releaseFirst = TestSemaphore()
        queue.async { _ = releaseFirst.wait(timeout: .milliseconds(5)) }  // sampled busy: not armed
        watchdog.watch(keepAwake)
        watchdog.watch(queue)
        queue.sync {}
        #expect(Self.looks(2, of: watchdog))
        let outcome = await offThePool { () -> (Bool, Int32) in
            let thread = CurrentThreadID.systemID
            // Its stall names no thread (door) or the caller's (through the lock); a report naming
            // a pool or worker thread is the first item's, late on a loaded machine.
            let reported = queue.sync {
                eventually(timeout: .seconds(20)) {
                    reports.all.contains {
                        $0.queueLabel == "att-door-\(mode)" && $0.kind == .running && ($0.threadID == nil || $0.threadID == thread)
                    }
                }
            }
            return (reported, thread)
        }
        releaseBusy.signal()
        keepAwake.sync {}
        #expect(outcome.0, "a stalled sync body was not reported (or named another thread): \(reports.all)")
    }

    /// A `sync` caller handed a busy queue at its turn (the worker waits for the body) and then
    /// stalling: reported as running on the caller's thread.
    @Test(arguments: QueueMode.allCases)
    func aSyncBodyHandedTheQueueAtItsTurnIsReportedWithItsThread(mode: QueueMode) async {
        let reports = Reports()
        let watchdog = StallWatchdog(
            runningThreshold: .milliseconds(20), waitingThreshold: .seconds(3600), checkInterval: .milliseconds(1)
        ) { reports.add($0) }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-turn-\(mode)")
        watchdog.watch(queue)
        let started = TestSemaphore()
        let release = TestSemaphore()
        queue.async {
            started.signal()
            _ = release.wait(timeout: .seconds(30))
        }
        #expect(started.wait(timeout: .seconds(20)))
        let callerThread = LockedValue<Int32>(0)
        let reportedInBody = LockedValue<Bool>(false)
        await runThreads(2) { index in
            if index == 0 {
                let thread = CurrentThreadID.systemID
                callerThread.withLock { $0 = thread }
                queue.sync {
                    let reported = eventually(timeout: .seconds(20)) {
                        reports.all.contains { $0.kind == .running && $0.threadID == thread }
                    }
                    reportedInBody.withLock { $0 = reported }
                }
            } else {
                // Released once the sync call waits in the FIFO: it is handed the queue at its
                // turn, never through the door.
                #expect(eventually(timeout: .seconds(20)) { queue.statistics.syncWaits >= 1 }, "the sync call never queued")
                release.signal()
            }
        }
        #expect(reportedInBody.withLock { $0 }, "the stalled sync body was not reported: \(reports.all)")
    }

    /// Delayed work pending far ahead is not work: the watchdog sleeps over it.
    @Test(arguments: QueueMode.allCases)
    func pendingDelayedWorkCostsNoLooks(mode: QueueMode) {
        let clock = LookClock()
        defer { clock.stop() }
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(20), checkInterval: .milliseconds(1)) { _ in }
        defer { watchdog.stop() }
        let queue = Self.queue(mode, label: "att-later-\(mode)")
        let later = queue.asyncAfter(delay: .seconds(3600)) {}
        defer { _ = later.cancel() }
        watchdog.watch(queue)
        #expect(eventually(timeout: .seconds(20)) { watchdog._isAsleep }, "never slept over a queue with only far delayed work")
        let looks = watchdog._lookCount
        #expect(clock.wait(looks: 100))
        #expect(watchdog._lookCount == looks, "far delayed work cost \(watchdog._lookCount - looks) looks in 100 ms")
    }
}
