#if SERIAL_SIMULATION
@testable import SerialCore
import SerialRuntime
import SerialTesting

/// Scenarios written from the promises SerialCore and SerialTimers document, and the exactly-once
/// promises of the services, one per promise (the table in `ReplayableSchedules.md` quotes each).
/// Each sets up the promise's situation with threads that race, and checks the promise itself,
/// not a known bug. Time is the run's virtual time.
enum PromiseScenarios {
    /// Blocks this simulated thread for `duration` of virtual time (a timed wait nobody signals).
    static func pause(_ duration: Duration) {
        let mutex = PthreadMutex()
        let never = PthreadCondition()
        let deadline = MonotonicInstant.now().advanced(by: duration)
        mutex.lock()
        while MonotonicInstant.now() < deadline { never.wait(releasing: mutex, until: deadline) }
        mutex.unlock()
    }

    // MARK: SerialCore

    /// "Releasing the last reference runs the work already enqueued, cancels delayed work not yet
    /// due, and returns once the worker thread has exited" (SerialQueueInDepth.md), dedicated or
    /// pooled: work from two threads, the release on a third.
    static func releaseRunsEnqueuedWorkAndCancelsDelayed(pooled: Bool) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "sim-rel-pool") : nil
            let log = ScenarioLog()
            let producer = SerialQueue(label: "sim-rel-producer")
            let releaser = SerialQueue(label: "sim-rel-releaser")
            let holder = ScenarioBox<SerialQueue?>(
                pool.map { SerialQueue(label: "sim-rel", pool: $0) } ?? SerialQueue(label: "sim-rel"))
            let later = holder.value!.asyncAfter(delay: .seconds(60)) { log.body(99) }
            producer.sync { for item in 0..<3 { holder.value!.async { log.body(item) } } }
            holder.value!.async { log.body(3) }
            releaser.sync { holder.value = nil }  // the last reference goes on another thread
            Simulation.check(log.entries == [0, 1, 2, 3], "released with work enqueued, ran \(log.entries)")
            Simulation.check(later.status == .cancelled, "delayed work not yet due is \(later.status)")
            pool?.shutdown()
        }
    }

    /// "`shutdown(.drain)` / `shutdown(.cancelPending)` stop the queue and report what was dropped;
    /// later … `tryAsync` throws `SerialQueueError.shutDown`" (SerialQueueInDepth.md): with two
    /// producers racing the shutdown, every submission ran once, was reported dropped, or was
    /// refused, and what ran ran in order.
    static func shutdownAccountsForEveryItem(_ mode: ShutdownMode, pooled: Bool) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "sim-sd-pool") : nil
            let target = pool.map { SerialQueue(label: "sim-sd", pool: $0) } ?? SerialQueue(label: "sim-sd")
            let producers = (0..<2).map { SerialQueue(label: "sim-sd-p\($0)") }
            let log = ScenarioLog()
            let refused = ScenarioBox(0)
            for (index, producer) in producers.enumerated() {
                producer.async {
                    for item in 0..<3 {
                        do { try target.tryAsync { log.body(index * 10 + item) } } catch { refused.value += 1 }
                    }
                }
            }
            let report = target.shutdown(mode)
            for producer in producers { producer.sync {} }
            let accounted = log.entries.count + report.cancelledWork + refused.value
            Simulation.check(accounted == 6,
                "6 submitted: ran \(log.entries), dropped \(report.cancelledWork), refused \(refused.value)")
            if mode == .drain { Simulation.check(report.cancelledWork == 0, "drain dropped \(report.cancelledWork)") }
            for index in 0..<2 {
                let own = log.entries.filter { $0 / 10 == index }
                Simulation.check(own == own.sorted(), "producer \(index) out of order: \(log.entries)")
            }
            pool?.shutdown()
        }
    }

    /// "Delayed work … never runs early; `cancel()` … true: it will not run" (SerialQueueInDepth.md,
    /// `DelayedWork.cancel`): delayed work from two threads, cancels racing the due time from a
    /// third; each piece ran once at or after its due time, or its cancel said true, never both.
    static let delayedWorkNeverEarlyAndCancelledOrRunOnce: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-delay")
        let canceller = SerialQueue(label: "sim-delay-cancel")
        let submitter = SerialQueue(label: "sim-delay-submit")
        let ran = ScenarioBox([Int: [MonotonicInstant]]())
        let works = ScenarioBox([Int: (due: MonotonicInstant, work: DelayedWork)]())
        let submit: @Sendable (Int) -> Void = { index in
            let delay = Duration.microseconds(200 * (index % 3 + 1))
            let earliest = MonotonicInstant.now().advanced(by: delay)
            let work = queue.asyncAfter(delay: delay) { ran.value[index, default: []].append(MonotonicInstant.now()) }
            works.value[index] = (earliest, work)
        }
        submitter.sync { for index in 0..<3 { submit(index) } }
        for index in 3..<6 { submit(index) }
        let cancelled = canceller.sync { () -> [Int: Bool] in
            Self.pause(.microseconds(400))
            return Dictionary(uniqueKeysWithValues: (0..<6).filter { $0 % 2 == 0 }.map { ($0, works.value[$0]!.work.cancel()) })
        }
        Self.pause(.milliseconds(2))
        queue.sync {}
        for index in 0..<6 {
            let runs = ran.value[index] ?? []
            if cancelled[index] == true {
                Simulation.check(runs.isEmpty, "work \(index): cancel() said true, and it ran")
            } else {
                Simulation.check(runs.count == 1, "work \(index) ran \(runs.count) times")
            }
            if let first = runs.first {
                Simulation.check(first >= works.value[index]!.due, "work \(index) ran early: \(first) < \(works.value[index]!.due)")
            }
        }
    }

    /// "Every service on the queue hears of it through `whenShutDown`, run on the worker as its last
    /// act (so `shutdown()` returns after them)" and "runs at once when the scheduler has already
    /// stopped" (SerialQueueInDepth.md, `Scheduling.whenShutDown`): one handler registered before,
    /// one racing the shutdown from another thread; each runs exactly once.
    static let whenShutDownRunsEachHandlerOnce: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-wsd")
        let registrar = SerialQueue(label: "sim-wsd-reg")
        let before = ScenarioBox(0)
        let racing = ScenarioBox(0)
        let early = queue.whenShutDown { _ in before.value += 1 }
        registrar.async { _ = queue.whenShutDown { _ in racing.value += 1 } }
        _ = queue.shutdown()
        Simulation.check(before.value == 1, "a handler registered before shutdown ran \(before.value) times by its return")
        registrar.sync {}
        Simulation.check(racing.value == 1, "a handler registered during shutdown ran \(racing.value) times")
        _ = early
    }

    /// "`SerialQueue(label:maximumQueued:)` bounds the items waiting for the worker: … `async`
    /// waits for room" (SerialQueueInDepth.md): two producers into a queue bounded at one item;
    /// each producer's work runs in order, all of it, and nobody waits forever.
    static let boundedQueueWaitsForRoom: @Sendable () -> Void = {
        let target = SerialQueue(label: "sim-bound", maximumQueued: 1)
        let producers = (0..<2).map { SerialQueue(label: "sim-bound-p\($0)") }
        let log = ScenarioLog()
        for (index, producer) in producers.enumerated() {
            producer.async { for item in 0..<3 { target.async { log.body(index * 10 + item) } } }
        }
        for producer in producers { producer.sync {} }
        target.sync {}
        Simulation.check(log.entries.count == 6, "ran \(log.entries)")
        for index in 0..<2 {
            let own = log.entries.filter { $0 / 10 == index }
            Simulation.check(own == own.sorted(), "producer \(index) out of order: \(log.entries)")
        }
    }

    /// `WorkerPool`: "a pool thread runs one *turn* of it — at most 64 items, so one busy queue
    /// cannot starve the others — and puts it back behind the work waiting": one pool thread, a
    /// queue with 150 items, and one item for another queue submitted meanwhile from outside; at
    /// most two turns of the busy queue (128 items) run after that submission before it.
    static let pooledTurnsAreBounded: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 1, label: "sim-turns")
        let busy = SerialQueue(label: "sim-turns-busy", pool: pool)
        let other = SerialQueue(label: "sim-turns-other", pool: pool)
        let busyRan = ScenarioBox(0)
        let busyRanBeforeOther = ScenarioBox(-1)
        for _ in 0..<150 { busy.async { busyRan.value += 1 } }
        let submittedAt = busyRan.value
        other.async { busyRanBeforeOther.value = busyRan.value }
        other.sync {}
        busy.sync {}
        let behind = busyRanBeforeOther.value - submittedAt
        Simulation.check(behind <= 128, "\(behind) items of the busy queue ran after the other queue's work was submitted")
        pool.shutdown()
    }

    /// `WorkerPool`: "Work that falls due goes to the head of the run queue, ahead of the queues
    /// waiting for a thread, … when every pool thread is busy it is late by at most the rest of
    /// one turn (64 items of one queue) behind the work that fell due before it": with the one pool
    /// thread busy while six idle queues' delayed work falls due one after another, that work
    /// runs in the order it fell due.
    static let pooledDueWorkRunsInDueOrder: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 1, label: "sim-due")
        let busy = SerialQueue(label: "sim-due-busy", pool: pool)
        let queues = (0..<6).map { SerialQueue(label: "sim-due-\($0)", pool: pool) }
        let log = ScenarioLog()
        let started = ScenarioBox(false)
        busy.async {
            started.value = true
            Self.pause(.milliseconds(2))  // holds the only pool thread while the work falls due
        }
        while !started.value { _ = MonotonicInstant.now() }
        for (index, queue) in queues.enumerated() {
            _ = queue.asyncAfter(delay: .microseconds(100 + 200 * index)) { log.body(index) }
        }
        Self.pause(.milliseconds(4))
        for queue in queues { queue.sync {} }
        Simulation.check(log.entries == Array(0..<6), "due work ran in the order \(log.entries), not as it fell due")
        pool.shutdown()
    }

    /// `StallWatchdog`: it "reports, once per stall, any queue whose running work has not
    /// finished within `runningThreshold`"; "When a look finds every watched queue idle, the
    /// watchdog sleeps with no deadline, and each idle queue is armed to wake it the moment it
    /// gets work". One idle queue watched from the start; a second one watched once the first
    /// look has begun (it may be under way, or over and asleep), then given work that runs 3 ms
    /// against a 1 ms threshold: that stall is reported, once.
    static let stallWatchdogReportsAQueueWatchedAtAnyMoment: @Sendable () -> Void = {
        let reports = ScenarioBox([String]())
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(1), checkInterval: .microseconds(200)) {
            reports.value.append($0.queueLabel)
        }
        let idle = SerialQueue(label: "sim-idle")
        let queue = SerialQueue(label: "sim-stalled")
        watchdog.watch(idle)
        waitForFirstLook(of: watchdog)
        watchdog.watch(queue)
        queue.async { Self.pause(.milliseconds(3)) }
        queue.sync {}
        Self.pause(.milliseconds(1))  // looks after the stall ended report nothing more
        watchdog.stop()
        Simulation.check(reports.value == ["sim-stalled"], "a 3 ms stall against a 1 ms threshold was reported \(reports.value)")
    }

    /// `StallWatchdog` reports "any queue … whose oldest waiting item has not started within
    /// `waitingThreshold`" (`StallWatchdog.swift`): an item queued behind a long one, from another
    /// thread, while an earlier item ran (so the worker may take both in one batch, or not), waits
    /// 3 ms against a 1 ms threshold: reported once as waiting, wherever it waited.
    static func stallWatchdogReportsAnItemWaitingBehindALongOne(pooled: Bool) -> @Sendable () -> Void {
        {
            let reports = ScenarioBox([StallWatchdog.Stall.Kind]())
            let watchdog = StallWatchdog(
                runningThreshold: .seconds(60), waitingThreshold: .milliseconds(1), checkInterval: .microseconds(200)
            ) { reports.value.append($0.kind) }
            let pool = pooled ? WorkerPool(threads: 2, label: "sim-wait-pool") : nil
            let queue = pool.map { SerialQueue(label: "sim-waiting", pool: $0) } ?? SerialQueue(label: "sim-waiting")
            let producer = SerialQueue(label: "sim-waiting-producer")
            watchdog.watch(queue)
            queue.async { Self.pause(.microseconds(50)) }
            producer.async {
                queue.async { Self.pause(.milliseconds(3)) }  // the long one
                queue.async {}  // waits behind it
            }
            producer.sync {}
            queue.sync {}
            watchdog.stop()
            Simulation.check(reports.value == [.waiting], "an item that waited 3 ms (threshold 1 ms) was reported \(reports.value)")
            pool?.shutdown()
        }
    }

    /// `StallWatchdog` ("Limits"): "A queue times only some of its waits …: an untimed wait counts
    /// from the first look that sees it, so it is reported up to one `checkInterval` later". A
    /// queue's first wait is timed; its second, begun with no watchdog armed on it (no look came
    /// between the two), is not. Here the second is an item queued while the queue is suspended,
    /// 3 ms against a 1 ms threshold (interval 200 µs): reported once, as waiting, whether or not a
    /// look happened to fall between the waits and armed the watchdog (which times the second).
    static func stallWatchdogReportsAnUntimedWait(pooled: Bool) -> @Sendable () -> Void {
        {
            let reports = ScenarioBox([StallWatchdog.Stall.Kind]())
            let watchdog = StallWatchdog(
                runningThreshold: .seconds(60), waitingThreshold: .milliseconds(1), checkInterval: .microseconds(200)
            ) { reports.value.append($0.kind) }
            let pool = pooled ? WorkerPool(threads: 2, label: "sim-untimed-pool") : nil
            let queue = pool.map { SerialQueue(label: "sim-untimed", pool: $0) } ?? SerialQueue(label: "sim-untimed")
            watchdog.watch(queue)
            queue.async {}  // the first wait: timed
            queue.sync {}
            queue.suspend()
            queue.async {}  // the second: untimed unless a look armed the watchdog since the first
            Self.pause(.milliseconds(3))
            queue.resume()
            queue.sync {}
            watchdog.stop()
            Simulation.check(
                reports.value == [.waiting], "an untimed wait of 3 ms (threshold 1 ms) was reported \(reports.value)")
            pool?.shutdown()
        }
    }

    /// `StallWatchdog.watch`/`stopWatching` (`StallWatchdog.swift`): the watchdog "reports … any
    /// queue whose running work has not finished within `runningThreshold`" of those it watches.
    /// `watch` and `stopWatching` of one queue race on two threads while virtual time passes (so a
    /// look can fall between any of their steps); the queue is then watched once more, so it is
    /// watched whatever their order, and its 3 ms stall (1 ms threshold) must be reported.
    /// (Found by an attack on the watchdog: a late disarm used to undo a look's arming.)
    static let stallWatchdogReportsAQueueWhoseWatchRacedStopWatching: @Sendable () -> Void = {
        let reports = ScenarioBox([String]())
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(1), checkInterval: .microseconds(1)) {
            reports.value.append("\($0.queueLabel) \($0.kind) \($0.threadID.map(String.init) ?? "sync")")
        }
        let queue = SerialQueue(label: "sim-raced")
        let a = SerialQueue(label: "sim-a")
        let b = SerialQueue(label: "sim-b")
        let clock = SerialQueue(label: "sim-clock")
        watchdog.watch(queue)
        var waits = 0
        while !(watchdog._isAsleep && queue._isArmed(for: watchdog)) && waits < 5_000 {
            _ = MonotonicInstant.now()
            waits += 1
        }
        // Time passes while the two calls race (clock reads move virtual time), so the watchdog's
        // interval can run out, and a look happen, between any two of their steps.
        clock.async { for _ in 0..<2_000 { _ = MonotonicInstant.now() } }
        a.async { watchdog.stopWatching(queue) }
        b.async { watchdog.watch(queue) }
        a.sync {}
        b.sync {}
        clock.sync {}
        watchdog.watch(queue)  // watched from here on, whichever of the two came last
        var reads = 0
        while !watchdog._isAsleep && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        queue.async { Self.pause(.milliseconds(3)) }
        queue.sync {}
        Self.pause(.milliseconds(1))
        let armedAfter = queue._isArmed(for: watchdog)
        watchdog.stop()
        // At least once: a thread the scheduler leaves unscheduled inside the `sync` below for a
        // virtual millisecond is a second, real stall.
        Simulation.check(
            !reports.value.isEmpty,
            "a watched queue's 3 ms stall (1 ms threshold) was reported \(reports.value); armed afterwards: \(armedAfter)")
    }

    // MARK: SerialTimers

    /// "A callback runs within [deadline, deadline + tolerance], never before its deadline"
    /// (TimersInDepth.md): timers of each kind of tolerance (one tick, precise, coalesced)
    /// scheduled from two threads; "callbacks run on the scheduler" (SerialTimers.md). Virtual
    /// time moves 1 µs per clock read, so the check allows 100 µs of reads beyond the window.
    static let timersFireInTheirWindow: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-window")
        let other = SerialQueue(label: "sim-window-other")
        let timers = TimerService(scheduler: queue, tick: .milliseconds(1))
        let fired = ScenarioBox([Int: MonotonicInstant]())
        let handles = ScenarioBox([Int: (TimerHandle, Duration)]())
        let plan: [(Duration, Duration?)] = [
            (.microseconds(1_500), nil), (.microseconds(700), .zero), (.milliseconds(2), .milliseconds(3)),
            (.microseconds(2_300), .zero), (.milliseconds(1), nil), (.microseconds(2_500), .microseconds(500)),
        ]
        let schedule: @Sendable (Int) -> Void = { index in
            let (delay, tolerance) = plan[index]
            let handle = try! timers.schedule(after: delay, tolerance: tolerance) {
                Simulation.check(queue.isCurrent, "timer \(index)'s callback ran off the service's scheduler")
                fired.value[index] = MonotonicInstant.now()
            }
            handles.value[index] = (handle, tolerance ?? .milliseconds(1))
        }
        other.async { for index in 0..<3 { schedule(index) } }
        for index in 3..<6 { schedule(index) }
        other.sync {}
        Self.pause(.milliseconds(10))
        queue.sync {}
        for index in 0..<6 {
            let (handle, tolerance) = handles.value[index]!
            guard let at = fired.value[index] else {
                Simulation.check(false, "timer \(index) never fired (\(handle.status))")
                continue
            }
            Simulation.check(at >= handle.deadline, "timer \(index) fired early: \(at) < \(handle.deadline)")
            let latest = handle.deadline.advanced(by: tolerance + .microseconds(100))
            Simulation.check(at <= latest, "timer \(index) fired at \(at), after its window ending \(latest)")
        }
        _ = timers.stop()
    }

    /// "`retry.cancel()` // true: it will not run", "`reschedule` … when it races the fire it says
    /// which deadline won …, and exactly one firing happens" (TimersInDepth.md): a cancel and a
    /// reschedule from another thread racing each timer's fire.
    static let timerCancelOrRescheduleRacingTheFireFiresOnce: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-race")
        let racer = SerialQueue(label: "sim-race-other")
        let timers = TimerService(scheduler: queue, tick: .microseconds(100))
        let fired = ScenarioBox([0, 0])
        let firedAt = ScenarioBox([MonotonicInstant?](repeating: nil, count: 2))
        let cancelled = try! timers.schedule(after: .microseconds(300)) { fired.value[0] += 1 }
        let moved = try! timers.schedule(after: .microseconds(300)) {
            fired.value[1] += 1
            firedAt.value[1] = MonotonicInstant.now()
        }
        let (cancel, reschedule) = racer.sync { () -> (Bool, TimerReschedule) in
            Self.pause(.microseconds(290))
            return (cancelled.cancel(), moved.reschedule(after: .milliseconds(1)))
        }
        Self.pause(.milliseconds(3))
        queue.sync {}
        Simulation.check(fired.value[0] == (cancel ? 0 : 1), "cancel() said \(cancel), and the timer fired \(fired.value[0]) times")
        Simulation.check(fired.value[1] == 1, "a rescheduled timer fired \(fired.value[1]) times (\(reschedule))")
        if reschedule == .movedToNewDeadline, let at = firedAt.value[1] {
            Simulation.check(at >= moved.deadline, "moved, but fired at \(at) before its new deadline \(moved.deadline)")
        }
        _ = timers.stop()
    }

    /// "Every timer ends with one terminal `TimerHandle.status` (`.fired`, `.cancelled`, `.stopped`,
    /// `.schedulerShutDown(reason)`)"; `stop()` drops "every timer that has not been handed to a
    /// scheduler turn … (status `.stopped`)" (TimersInDepth.md, `TimerService.stop`): timers firing
    /// while another thread stops the service (or shuts its queue down): each ran once iff fired.
    static func timersEndOnceWhenTheServiceEnds(byQueueShutdown: Bool) -> @Sendable () -> Void {
        {
            let queue = SerialQueue(label: "sim-end")
            let stopper = SerialQueue(label: "sim-end-stopper")
            let timers = TimerService(scheduler: queue, tick: .microseconds(100))
            let ran = ScenarioBox([Int](repeating: 0, count: 6))
            let handles = (0..<6).map { index in
                try! timers.schedule(after: .microseconds(100 * (index + 1)), tolerance: index % 2 == 0 ? .zero : nil) {
                    ran.value[index] += 1
                }
            }
            let dropped = stopper.sync { () -> Int in
                Self.pause(.microseconds(350))
                if byQueueShutdown {
                    _ = queue.shutdown()
                    return -1
                }
                return timers.stop()
            }
            Self.pause(.milliseconds(2))
            if !byQueueShutdown { queue.sync {} }
            var stopped = 0
            for (index, handle) in handles.enumerated() {
                switch handle.status {
                case .fired: Simulation.check(ran.value[index] == 1, "timer \(index) fired, ran \(ran.value[index]) times")
                case .stopped where !byQueueShutdown, .schedulerShutDown where byQueueShutdown:
                    stopped += 1
                    Simulation.check(ran.value[index] == 0, "timer \(index) is \(handle.status), and ran")
                default: Simulation.check(false, "timer \(index) ended as \(handle.status)")
                }
            }
            if !byQueueShutdown { Simulation.check(dropped == stopped, "stop() said \(dropped), \(stopped) stopped") }
        }
    }

    /// "`schedule(every:)` is fixed-rate: period k is due at `first + k × period` (no drift), a
    /// period already past when the previous one fires is skipped and counted (`skippedPeriods`),
    /// never run in a burst" (TimersInDepth.md): a repeating timer whose queue another thread
    /// holds for three periods.
    static let repeatingTimerKeepsItsGridWithoutBursts: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-every")
        let holder = SerialQueue(label: "sim-every-holder")
        let timers = TimerService(scheduler: queue, tick: .microseconds(10))
        let period = Duration.microseconds(200)
        let fired = ScenarioBox([MonotonicInstant]())
        let first = MonotonicInstant.now().advanced(by: period)
        let handle = try! timers.schedule(every: period, startingAt: first, tolerance: .zero) { fired.value.append(MonotonicInstant.now()) }
        holder.async {
            Self.pause(.microseconds(300))
            queue.sync { Self.pause(.microseconds(600)) }
        }
        Self.pause(.microseconds(1_900))
        _ = handle.cancel()
        holder.sync {}
        queue.sync {}
        let slots = fired.value.map { first.duration(to: $0) / period }
        for (index, at) in fired.value.enumerated() {
            let slot = Int(first.duration(to: at) / period)
            Simulation.check(at >= first.advanced(by: period * slot), "firing \(index) at \(at) is early for its period")
            if index > 0 {
                let previous = Int(first.duration(to: fired.value[index - 1]) / period)
                Simulation.check(slot > previous, "two firings in period \(slot) (a burst): \(slots)")
            }
        }
        Simulation.check(fired.value.count + handle.skippedPeriods >= 8,
            "\(fired.value.count) fired + \(handle.skippedPeriods) skipped: periods lost")
    }

    /// "`TimeoutManager` runs an operation with a timeout and delivers exactly one outcome"; "a
    /// second task with a key already in flight joins it: its operation does not run and it gets
    /// the same outcome"; on shutdown it "ends every task in flight" (TimersInDepth.md): operations
    /// ending around their timeout, a joiner, and a shutdown racing them from another thread.
    static func timeoutManagerDeliversOneOutcome(shutdownRacing: Bool) -> @Sendable () -> Void {
        {
            let queue = SerialQueue(label: "sim-tm")
            let other = SerialQueue(label: "sim-tm-other")
            let manager = TimeoutManager<Int>(scheduler: queue, workerCount: 2, label: "sim-tmw", tick: .microseconds(100))
            let outcomes = ScenarioBox([String: [String]]())
            let operations = ScenarioBox(0)
            let run: @Sendable (String, String?, Duration) -> Void = { name, key, work in
                _ = try? manager.run(taskKey: key, timeout: .microseconds(300)) {
                    operations.value += 1
                    Self.pause(work)
                    return 1
                } completion: { outcome in outcomes.value[name, default: []].append("\(outcome)") }
            }
            run("fast", nil, .microseconds(100))
            other.sync { run("slow", "k", .microseconds(500)) }
            run("joiner", "k", .zero)
            if shutdownRacing {
                other.async {
                    Self.pause(.microseconds(250))
                    _ = manager.shutdown()
                }
            }
            Self.pause(.milliseconds(2))
            other.sync {}
            queue.sync {}
            for name in ["fast", "slow", "joiner"] {
                Simulation.check(outcomes.value[name]?.count == 1, "\(name) got \(outcomes.value[name] ?? [])")
            }
            Simulation.check(outcomes.value["joiner"] == outcomes.value["slow"],
                "the joiner got \(outcomes.value["joiner"] ?? []), the task it joined \(outcomes.value["slow"] ?? [])")
            Simulation.check(operations.value <= 2, "\(operations.value) operations ran for two tasks and a joiner")
            if !shutdownRacing { _ = manager.shutdown() }
        }
    }

    /// `withWheelDeadline` (WheelDeadline.swift): "`CancellationError` (or whatever `operation`
    /// threw) when the calling task itself was cancelled before the deadline: the moment of that
    /// cancellation counts, not the moment `operation` ends, which may be past the deadline", and
    /// `WheelDeadlineExceeded` "after the calling task was cancelled once this deadline had
    /// passed". Two callers with a +100 ms deadline and 1 s of tolerance, whose operations end
    /// only at +150 ms and +250 ms (a step that cancellation does not end), one cancelled at
    /// +50 ms and one at +200 ms, while the deadlines' timers fire anywhere in their windows.
    static let deadlineOutcomeFollowsWhenTheCallerWasCancelled: @Sendable () async -> Void = {
        let queue = SerialQueue(label: "sim-deadline")
        let clock = WheelClock(timers: TimerService(scheduler: queue, tick: .milliseconds(1)))
        let start = clock.now
        @Sendable func call(cancelledAt cancelAt: Duration, endingAt end: Duration) async -> String {
            let caller = Task {
                do {
                    return try await withWheelDeadline(
                        at: start.advanced(by: .milliseconds(100)), tolerance: .seconds(1), clock: clock
                    ) {
                        await withCheckedContinuation { (step: CheckedContinuation<Void, Never>) in
                            _ = queue.asyncAfter(delay: clock.now.duration(to: start.advanced(by: end))) { step.resume() }
                        }
                        try Task.checkCancellation()
                        return "value"
                    }
                } catch is CancellationError {
                    return "cancelled"
                } catch is WheelDeadlineExceeded {
                    return "exceeded"
                } catch {
                    return "\(error)"
                }
            }
            try? await Task.sleep(for: clock.now.duration(to: start.advanced(by: cancelAt)))
            caller.cancel()
            return await caller.value
        }
        async let early = call(cancelledAt: .milliseconds(50), endingAt: .milliseconds(150))
        async let late = call(cancelledAt: .milliseconds(200), endingAt: .milliseconds(250))
        let (before, after) = await (early, late)
        Simulation.check(before == "cancelled", "a caller cancelled at +50 ms, before its +100 ms deadline, got \(before)")
        Simulation.check(after == "exceeded", "a caller cancelled at +200 ms, past its +100 ms deadline, got \(after)")
        queue.sync {}
    }

    // MARK: The services' exactly-once promises

    /// A countdown clock on the run's virtual time (the default reads `CLOCK_BOOTTIME` directly).
    struct VirtualCountdownClock: CountdownClock {
        func now() -> Duration { .nanoseconds(Int64(MonotonicInstant.now().nanoseconds)) }
    }

    final class Receiver: Sendable {}

    /// "Every countdown ends with exactly one call whose `end` is set, except one whose receiver
    /// was released" (`CountdownManager.register`); endings by finishing, `cancel`, `register`
    /// again (replaced) and the queue's shutdown, racing the ticks from other threads; and
    /// `cancel` "called from the manager's queue (a handler), no tick call of that countdown
    /// follows" (`CountdownManager.cancel`), for a countdown later in the same tick.
    static func countdownsEndExactlyOnce(shutdownRacing: Bool) -> @Sendable () -> Void {
        {
            let queue = SerialQueue(label: "sim-cd")
            let other = SerialQueue(label: "sim-cd-other")
            let manager = CountdownManager(interval: .microseconds(200), queue: queue, clock: VirtualCountdownClock())
            let receivers = (0..<4).map { _ in Receiver() }
            let ends = ScenarioBox([String: [CountdownEnd]]())
            let afterEnd = ScenarioBox([String]())
            let cancelledFromHandler = ScenarioBox(false)
            let register: @Sendable (Int, String, Duration) -> Void = { index, name, duration in
                manager.register(receivers[index], for: duration) { _, tick, _ in
                    if ends.value[name] != nil { afterEnd.value.append("\(name): \(tick)") }
                    if name == "cancelled by a handler", cancelledFromHandler.value, !tick.isFinal {
                        afterEnd.value.append("\(name): \(tick) after its cancel returned")
                    }
                    if let end = tick.end { ends.value[name, default: []].append(end) }
                    if name == "finishes", !cancelledFromHandler.value {
                        _ = manager.cancel(receivers[3])
                        cancelledFromHandler.value = true
                    }
                }
            }
            register(0, "finishes", .microseconds(600))
            register(1, "cancelled", .milliseconds(5))
            register(2, "replaced", .milliseconds(5))
            register(3, "cancelled by a handler", .milliseconds(5))
            other.async {
                Self.pause(.microseconds(300))
                _ = manager.cancel(receivers[1])
                register(2, "replacement", .microseconds(400))
                if shutdownRacing { _ = queue.shutdown() }
            }
            Self.pause(.milliseconds(3))
            other.sync {}
            if !shutdownRacing { queue.sync {} }
            for name in ["finishes", "cancelled", "replaced", "replacement", "cancelled by a handler"] {
                Simulation.check(ends.value[name]?.count == 1, "countdown \(name) ended \(ends.value[name] ?? [])")
            }
            Simulation.check(afterEnd.value.isEmpty, "calls after the ending call: \(afterEnd.value)")
            if !shutdownRacing {
                Simulation.check(ends.value["finishes"] == [.finished], "\(ends.value["finishes"] ?? [])")
                Simulation.check(ends.value["cancelled"] == [.cancelled], "\(ends.value["cancelled"] ?? [])")
                Simulation.check(ends.value["replaced"] == [.replaced], "\(ends.value["replaced"] ?? [])")
            }
            withExtendedLifetime(receivers) {}
        }
    }

    struct PollStopped: Error {}

    /// "`onOutcome` runs exactly once, after the session's last update"; `cancel()`: "whatever races
    /// it (a response arriving, a timer firing on another thread), the session still has exactly
    /// one outcome: `true` means it is `cancelled`" (`Poller.start`, `Poller.cancel`): replies
    /// from another thread, a per-attempt timeout, and a cancel racing them.
    static let pollerDeliversOneOutcome: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-poll")
        let server = SerialQueue(label: "sim-poll-server")
        let canceller = SerialQueue(label: "sim-poll-cancel")
        var policy = PollPolicy(interval: .microseconds(200), attemptTimeout: .microseconds(300))
        policy.backoff = .init(minimumDelay: .microseconds(100), maximumDelay: .microseconds(200), maximumConsecutiveErrors: 3)
        let poller = Poller<Int>(
            policy: policy, scheduler: queue, isDone: { $0 >= 3 }, changes: .everyResponse,
            query: .completion { attempt, reply in
                // Replies from the server's thread, some after the attempt's timeout.
                _ = server.asyncAfter(delay: .microseconds(attempt.number % 2 == 0 ? 350 : 50)) {
                    reply(.success(attempt.number))
                }
            })
        let outcomes = ScenarioBox([String]())
        let updatesAfterOutcome = ScenarioBox(0)
        poller.start(onUpdate: { _ in if !outcomes.value.isEmpty { updatesAfterOutcome.value += 1 } }) { outcome in
            outcomes.value.append("\(outcome)")
        }
        let cancelled = canceller.sync { () -> Bool in
            Self.pause(.microseconds(500))
            return poller.cancel()
        }
        Self.pause(.milliseconds(5))
        server.sync {}
        queue.sync {}
        Simulation.check(outcomes.value.count == 1, "outcomes: \(outcomes.value)")
        Simulation.check(updatesAfterOutcome.value == 0, "\(updatesAfterOutcome.value) updates after the outcome")
        if cancelled { Simulation.check(outcomes.value == ["cancelled"], "cancel() said true; outcome \(outcomes.value)") }
    }

    /// A transport whose answers come from another thread after a delay. Right after answering an
    /// original request (numbers below 100), the server's thread submits a follow-up (its number
    /// plus 100), answered in turn: submissions race the queue's own work on its answers.
    struct DelayedTransport: RequestTransport {
        let server: SerialQueue
        let followUp: ScenarioBox<(@Sendable (Int) -> Void)?>
        func send(_ request: Int, credential: Int, completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
            let followUp = self.followUp
            _ = self.server.asyncAfter(delay: .microseconds(100 * (request % 4 + 1))) {
                completion(.success(request))
                if request < 100 { followUp.value?(request + 100) }
            }
        }
    }

    /// "`completion` runs exactly once, on the scheduler" (`RequestQueue.submit`), "exactly one
    /// completion per request on every path including shutdown" (RequestsInDepth.md): requests
    /// from three threads (one of them the transport's, right after an answer), answers from it,
    /// cancels and timeouts racing the answers, and (optionally) the queue's shutdown.
    static func requestsCompleteExactlyOnce(shutdownRacing: Bool) -> @Sendable () -> Void {
        {
            let queue = SerialQueue(label: "sim-req")
            let server = SerialQueue(label: "sim-req-server")
            let client = SerialQueue(label: "sim-req-client")
            let policy = RequestQueue<DelayedTransport>.Policy(
                classify: { _, _ in .success }, refresh: { credential, done in done(.success(credential + 1)) })
            var configuration = RequestQueue<DelayedTransport>.Configuration()
            configuration.maximumConcurrent = 2
            let followUp = ScenarioBox<(@Sendable (Int) -> Void)?>(nil)
            let requests = RequestQueue(
                transport: DelayedTransport(server: server, followUp: followUp), credential: 0, policy: policy,
                configuration: configuration, scheduler: queue)
            let completions = ScenarioBox([Int: [String]]())
            let handles = ScenarioBox([Int: RequestHandle]())
            let submit: @Sendable (Int) -> Void = { number in
                handles.value[number] = requests.submit(number, timeout: number == 4 ? .microseconds(150) : nil) { result in
                    completions.value[number, default: []].append("\(result.state)")
                }
            }
            followUp.value = submit
            client.async { for number in 0..<3 { submit(number) } }
            for number in 3..<6 { submit(number) }
            client.sync {}
            let cancelledFirst = client.sync { () -> Bool in
                Self.pause(.microseconds(150))
                let cancelled = handles.value[0]!.cancel()
                if shutdownRacing { _ = requests.shutdown() }
                return cancelled
            }
            Self.pause(.milliseconds(3))
            server.sync {}
            queue.sync {}
            followUp.value = nil
            for number in handles.value.keys.sorted() {
                let seen = completions.value[number] ?? []
                Simulation.check(seen.count == 1, "request \(number) completed \(seen)")
                if let state = seen.first {
                    Simulation.check(state == "\(handles.value[number]!.state)",
                        "request \(number) completed as \(state), its handle says \(handles.value[number]!.state)")
                }
            }
            if cancelledFirst { Simulation.check(completions.value[0] == ["failure"], "cancel() said true: \(completions.value[0] ?? [])") }
            _ = requests.shutdown()
        }
    }
}

// The scenarios of attack 43 (2026-11-29) for two fixes that had none in the catalogue: the stall
// watchdog's (7ef66b0) and `Policy.refresh` answered once (d3d4a17).
extension PromiseScenarios {
    /// Catalogue: `stall-handoff-rest-waits-once-pooled`. StallWatchdog: "reports, once per stall,
    /// any queue … whose oldest waiting item has not started within `waitingThreshold`"; 7ef66b0
    /// (a pooled turn that handed the queue to a `sync` caller): "the rest now waits since its
    /// batch was taken, one stall". A pooled queue is suspended while a 40 ms item L, a sync turn
    /// S (body 60 ms, from another thread) and c enter; resumed, one turn takes [L, S, c]: S and c
    /// wait behind L (threshold 20 ms: reported), then c behind S's body, handed over by the pool
    /// thread (the rest of the batch goes back to the FIFO). c's wait is one stall: one report.
    static let pooledHandOffRestWaitsOnce: @Sendable () -> Void = {
        let reports = ScenarioBox([String]())
        let watchdog = StallWatchdog(
            runningThreshold: .seconds(60), waitingThreshold: .milliseconds(20), checkInterval: .milliseconds(1)
        ) { reports.value.append("\($0.kind) \($0.duration) \($0.waitingItems)") }
        let pool = WorkerPool(threads: 2, label: "sim-handoff-pool")
        let queue = SerialQueue(label: "sim-handoff", pool: pool)
        let caller = SerialQueue(label: "sim-handoff-caller")
        watchdog.watch(queue)
        queue.suspend()
        queue.async { Self.pause(.milliseconds(40)) }  // L
        caller.async { queue.sync { Self.pause(.milliseconds(60)) } }  // S
        var reads = 0
        while queue.statistics.syncWaits == 0 && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        Simulation.check(queue.statistics.syncWaits == 1, "the sync caller never queued its turn")
        let cRan = ScenarioBox(false)
        queue.async { cRan.value = true }  // c
        queue.resume()
        caller.sync {}
        queue.sync {}
        watchdog.stop()
        Simulation.check(cRan.value, "c never ran")
        Simulation.check(
            reports.value.count == 1 && reports.value[0].hasPrefix("waiting"),
            "c waited from the batch's take through L (40 ms) and S's body (60 ms), one stall (threshold 20 ms); reported: \(reports.value)")
        pool.shutdown()
    }

    struct Denied: Error {}

    /// Catalogue: `refresh-answered-once`. `RequestQueue.Policy.refresh`: its completion is called
    /// "once (later calls are ignored)"; d3d4a17: "a second answer is ignored, never published nor
    /// taken for the refresh's end". The credential expired at the start, so the first request
    /// parks and the refresh starts; `Policy.refresh` answers twice, from two endpoint queues: a
    /// success and a failure, in either order. Whichever comes first decides alone: the request
    /// ends once, served with the new token and the coordinator at generation 1, or failed
    /// (`refreshFailed`) with nothing published; the lease is not left held.
    static let refreshAnsweredTwiceTakesTheFirst: @Sendable () -> Void = {
        typealias Transport = CredentialLifetimeScenarios.StaleFleetTransport
        let coordination = SerialQueue(label: "sim-twice-coord")
        let coordinator = LocalCredentialCoordinator<String>(scheduler: coordination, leaseDuration: .seconds(3600))
        let transport = Transport(queue: SerialQueue(label: "sim-twice-server"))
        let endpoints = [SerialQueue(label: "sim-twice-auth-a"), SerialQueue(label: "sim-twice-auth-b")]
        let answers = ScenarioBox(0)
        let start = MonotonicInstant.now()
        let policy = RequestQueue<Transport>.Policy(
            classify: { _, _ in .success },
            refresh: { _, completion in
                endpoints[0].async {
                    completion(.success("token-1"))
                    answers.value += 1
                }
                endpoints[1].async {
                    completion(.failure(Denied()))
                    answers.value += 1
                }
            },
            lifetime: .init(refreshMargin: .seconds(1), retryInterval: .seconds(3600)) { token in
                start.advanced(by: token == "token-0" ? .seconds(-1) : .seconds(3600))
            })
        let scheduler = SerialQueue(label: "sim-twice-queue")
        let queue = RequestQueue(
            transport: transport, credential: "token-0", policy: policy, coordinator: coordinator, scheduler: scheduler)
        let outcomes = ScenarioBox([String]())  // on the scheduler
        queue.submit(1) { result in
            switch result {
            case .success, .cached: outcomes.value.append("served")
            case .failure(.refreshFailed): outcomes.value.append("refreshFailed")
            case .failure(let error): outcomes.value.append("\(error)")
            }
        }
        let everyQueue = [scheduler, coordination, transport.queue] + endpoints
        var rounds = 0
        while (outcomes.value.isEmpty || answers.value < 2) && rounds < 200 {
            for serial in everyQueue { serial.sync {} }
            rounds += 1
        }
        for _ in 0..<3 { for serial in everyQueue { serial.sync {} } }  // the ignored answer's effects, if any
        let generation = coordinator.generation ?? 0
        let lease = coordinator.currentLease
        Simulation.check(outcomes.value.count == 1, "the request ended \(outcomes.value) after \(rounds) rounds")
        switch outcomes.value.first {
        case "served":
            Simulation.check(
                generation == 1 && queue.credentialGeneration == 1,
                "served, yet the coordinator is at generation \(generation), the queue at \(queue.credentialGeneration)")
        case "refreshFailed":
            Simulation.check(
                generation == 0 && queue.credentialGeneration == 0,
                "the request failed with the refresh's failure, yet a credential was published (coordinator at generation \(generation))")
        default:
            Simulation.check(false, "the request ended \(outcomes.value)")
        }
        Simulation.check(lease == nil, "the lease is still held after the refresh ended: \(String(describing: lease))")
        queue.shutdown()
    }
}
#endif
