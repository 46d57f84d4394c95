import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// A tolerance per timer, on virtual time: precise timers fire at their exact deadline,
/// coalesced ones share wake-ups, every callback runs inside its window and never early.
@Suite("TimerService tolerance")
struct TimerToleranceTests {
    @Test func aPreciseTimerFiresAtItsExactDeadlineNotAtTheTicksEnd() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(1))
        let start = scheduler.now
        let fired = LockedValue<[String: MonotonicInstant]>([:])
        try timers.schedule(after: .microseconds(1_300), tolerance: .zero) { fired.withLock { $0["precise"] = scheduler.now } }
        try timers.schedule(after: .microseconds(1_300)) { fired.withLock { $0["default"] = scheduler.now } }
        try timers.schedule(after: .microseconds(1_700), tolerance: .microseconds(100)) {
            fired.withLock { $0["sub-tick"] = scheduler.now }
        }
        scheduler.advance(by: .milliseconds(5))
        #expect(
            fired.withLock { $0 } == [
                "precise": start + .microseconds(1_300), "sub-tick": start + .microseconds(1_700),
                "default": start + .milliseconds(2),
            ])
        #expect(timers.serviceStatistics.late == 0)
    }

    @Test func overlappingWindowsShareOneWakeUp() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        let fired = LockedValue<[Int: MonotonicInstant]>([:])
        // Windows [10, 30] ms and [25, 26] ms overlap: one wake-up, at 26 ms, fires both.
        try timers.schedule(after: .milliseconds(10), tolerance: .milliseconds(20)) { fired.withLock { $0[1] = scheduler.now } }
        try timers.schedule(after: .milliseconds(25), tolerance: .milliseconds(1)) { fired.withLock { $0[2] = scheduler.now } }
        scheduler.advance(by: .milliseconds(100))
        #expect(fired.withLock { $0 } == [1: start + .milliseconds(26), 2: start + .milliseconds(26)])
        #expect(timers.wakeUpCount == 1)
    }

    /// The coalescing the tolerance is for: a thousand timers spread over a second wake the
    /// service once per tick by default, about once per 10 ms with 10 ms of tolerance.
    @Test(arguments: [nil, .milliseconds(10)] as [Duration?])
    func timersSpreadOverASecondWakeOncePerToleranceNotPerTick(tolerance: Duration?) throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        let fired = TestCounter()
        var random = SeededRandom(seed: 24)
        for _ in 0..<1_000 {
            let delay = Duration.nanoseconds(Int64.random(in: 1_000_000..<1_000_000_000, using: &random))
            try timers.schedule(at: start + delay, tolerance: tolerance) { fired.increment() }
        }
        scheduler.advance(by: .seconds(2))
        #expect(fired.value == 1_000)
        if tolerance == nil {
            #expect(timers.wakeUpCount > 600, "one wake-up per occupied tick: \(timers.wakeUpCount)")
        } else {
            #expect(timers.wakeUpCount <= 101, "coalesced: \(timers.wakeUpCount) wake-ups")
        }
    }

    @Test func aPreciseRepeatingTimerFiresOnTheExactGrid() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(1))
        let start = scheduler.now
        let fired = LockedValue<[MonotonicInstant]>([])
        let handle = try timers.schedule(every: .microseconds(1_500), tolerance: .zero) {
            fired.withLock { $0.append(scheduler.now) }
        }
        scheduler.advance(by: .microseconds(6_000))
        #expect(fired.withLock { $0 } == (1...4).map { start + .microseconds(1_500 * $0) })
        #expect(handle.cancel())
    }

    @Test func rescheduleKeepsOrChangesTheTolerance() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        let fired = LockedValue<[String: MonotonicInstant]>([:])
        let precise = try timers.schedule(after: .seconds(1), tolerance: .zero) { fired.withLock { $0["precise"] = scheduler.now } }
        let coalesced = try timers.schedule(after: .seconds(1), tolerance: .zero) {
            fired.withLock { $0["coalesced"] = scheduler.now }
        }
        let plain = try timers.schedule(after: .seconds(1)) { fired.withLock { $0["plain"] = scheduler.now } }
        #expect(precise.reschedule(after: .microseconds(2_300)) == .movedToNewDeadline)  // keeps .zero
        #expect(coalesced.reschedule(after: .microseconds(2_300), tolerance: .milliseconds(5)) == .movedToNewDeadline)
        #expect(plain.reschedule(after: .microseconds(2_400), tolerance: .microseconds(10)) == .movedToNewDeadline)
        scheduler.advance(by: .seconds(2))
        #expect(
            fired.withLock { $0 } == [
                "precise": start + .microseconds(2_300), "plain": start + .microseconds(2_400),
                "coalesced": start + .milliseconds(7),
            ])
    }

    @Test func cancellingAPreciseTimerPreventsItAndReArmsNothingEarly() throws {
        let scheduler = InstrumentedScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = TestCounter()
        let handles = try (1...200).map { index in
            try timers.schedule(after: .microseconds(100 * index), tolerance: .zero) { fired.increment() }
        }
        for (index, handle) in handles.enumerated() where index % 2 == 0 { #expect(handle.cancel()) }
        #expect(timers.pendingCount == 100)
        scheduler.base.advance(by: .seconds(1))
        #expect(fired.value == 100)
        #expect(timers.pendingCount == 0)
        #expect(handles.enumerated().allSatisfy { $0.offset % 2 == 0 ? $0.element.status == .cancelled : $0.element.status == .fired })
    }

    @Test func theSchedulersShutdownEndsPreciseAndCoalescedTimersWithItsReason() throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let timers = TimerService(scheduler: scheduler)
        let handles = try [nil, .zero, .milliseconds(50)].map { (tolerance: Duration?) in
            try timers.schedule(after: .seconds(1), tolerance: tolerance) { Issue.record("fired after the shutdown") }
        }
        scheduler.shutdown()
        let reason = SchedulingError.shutDown(scheduler: "virtual")
        #expect(handles.allSatisfy { $0.status == .schedulerShutDown(reason) })
        #expect(timers.serviceStatistics.outcomes["schedulerShutDown"] == 3)
        #expect(throws: TimerServiceError.schedulerShutDown(reason)) {
            try timers.schedule(after: .seconds(1), tolerance: .zero) {}
        }
    }

    @Test func stoppingEndsPreciseAndCoalescedTimersToo() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let handles = try [nil, .zero, .milliseconds(50)].map { (tolerance: Duration?) in
            try timers.schedule(after: .seconds(1), tolerance: tolerance) { Issue.record("fired after stop") }
        }
        #expect(timers.stop() == 3)
        scheduler.advance(by: .seconds(2))
        #expect(handles.allSatisfy { $0.status == .stopped })
    }

    /// The order the docs give: timers run in the order they fall due, a wheel timer at the
    /// tick its deadline rounds up to (submission order within it), a precise one at its exact
    /// deadline; not strictly by deadline, and a tolerance never puts a timer behind one that
    /// falls due later.
    @Test func callbacksRunInTheOrderTheirTimersFallDueNotStrictlyByDeadline() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(1))
        let start = scheduler.now
        let ran = LockedValue<[String]>([])
        func record(_ name: String) -> @Sendable () -> Void {
            { ran.withLock { $0.append("\(name) at \(scheduler.now - start)") } }
        }
        // Within one tick: the default timers fall due at its end (11 ms), in submission order;
        // the precise one falls due at its deadline, before them, though its deadline is later.
        try timers.schedule(after: .microseconds(10_700), record("default 10.7 ms"))
        try timers.schedule(after: .microseconds(10_300), record("default 10.3 ms"))
        try timers.schedule(after: .microseconds(10_500), tolerance: .zero, record("precise 10.5 ms"))
        // A coalesced timer (window [100 ms, 1.1 s]) does not wait behind a precise one due at
        // 500 ms: that wake-up fires it too, first.
        try timers.schedule(after: .milliseconds(500), tolerance: .zero, record("precise 500 ms"))
        try timers.schedule(after: .milliseconds(100), tolerance: .seconds(1), record("coalesced 100 ms"))
        scheduler.advance(by: .seconds(2))
        #expect(
            ran.withLock { $0 } == [
                "precise 10.5 ms at 0.0105 seconds", "default 10.7 ms at 0.011 seconds",
                "default 10.3 ms at 0.011 seconds", "coalesced 100 ms at 0.5 seconds", "precise 500 ms at 0.5 seconds",
            ])
    }
}
