import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// TimerService on virtual time: deadlines, the one armed wake-up, limits, stop.
@Suite("TimerService")
struct TimerServiceTests {
    /// Records what ran, and the virtual time it ran at.
    final class Log: Sendable {
        let entries = LockedValue<[(String, MonotonicInstant)]>([])
        func append(_ name: String, at instant: MonotonicInstant) { self.entries.withLock { $0.append((name, instant)) } }
        var names: [String] { self.entries.withLock { $0.map(\.0) } }
        var times: [MonotonicInstant] { self.entries.withLock { $0.map(\.1) } }
    }

    @Test func aCallbackRunsAtItsDeadlineOnTheSchedulerAndNotBefore() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(1))
        let start = scheduler.now
        let log = Log()
        let onScheduler = TestFlag()
        try timers.schedule(after: .milliseconds(5)) {
            if scheduler.isCurrent { onScheduler.set() }
            log.append("a", at: scheduler.now)
        }
        scheduler.advance(by: .nanoseconds(4_999_999))
        #expect(log.names.isEmpty)
        scheduler.advance(by: .nanoseconds(1))
        #expect(log.names == ["a"])
        #expect(log.times == [start + .milliseconds(5)])
        #expect(onScheduler.isSet)
        #expect(timers.pendingCount == 0)
    }

    @Test(arguments: [1, 250_000, 999_999, 1_000_000, 1_000_001, 2_500_000])
    func aDeadlineRoundsUpToTheTickNeverEarlyAtMostOneTickLate(delayNanoseconds: Int64) throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(1))
        let start = scheduler.now
        let log = Log()
        try timers.schedule(after: .nanoseconds(delayNanoseconds)) { log.append("t", at: scheduler.now) }
        scheduler.advance(by: .seconds(1))
        let fired = try #require(log.times.first)
        let deadline = start + .nanoseconds(delayNanoseconds)
        #expect(fired >= deadline, "fired early")
        #expect(fired - deadline < .milliseconds(1), "fired more than one tick late")
    }

    @Test func callbacksRunInDeadlineOrderAndSubmissionOrderWithinATick() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let log = Log()
        try timers.schedule(after: .seconds(70)) { log.append("70s", at: scheduler.now) }
        try timers.schedule(after: .milliseconds(3)) { log.append("3ms-a", at: scheduler.now) }
        try timers.schedule(after: .seconds(2)) { log.append("2s", at: scheduler.now) }
        try timers.schedule(after: .milliseconds(3)) { log.append("3ms-b", at: scheduler.now) }
        scheduler.advance(by: .seconds(100))
        #expect(log.names == ["3ms-a", "3ms-b", "2s", "70s"])
    }

    @Test func manyTimersKeepExactlyOneWakeUpArmedOnTheScheduler() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        #expect(scheduler.pendingCount == 0, "no wake-up before any timer")
        let fired = TestCounter()
        for index in 0..<1_000 {
            try timers.schedule(after: .milliseconds(Int64(10 + index * 37 % 5_000))) { fired.increment() }
            #expect(scheduler.pendingCount == 1)
        }
        scheduler.advance(by: .seconds(10))
        #expect(fired.value == 1_000)
        #expect(scheduler.pendingCount == 0, "no wake-up left once nothing is pending")
    }

    @Test func laterTimersDoNotReArmButAnEarlierOneDoes() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        try timers.schedule(after: .milliseconds(10)) {}
        #expect(scheduler.nextDeadline == start + .milliseconds(10))
        try timers.schedule(after: .milliseconds(20)) {}
        try timers.schedule(after: .seconds(30)) {}
        #expect(scheduler.nextDeadline == start + .milliseconds(10))
        try timers.schedule(after: .milliseconds(4)) {}
        #expect(scheduler.nextDeadline == start + .milliseconds(4))
        #expect(scheduler.pendingCount == 1, "the later wake-up was cancelled, not left armed")
    }

    @Test func schedulingTimersDueAfterTheArmedWakeUpMakesNoSchedulerCall() throws {
        let scheduler = InstrumentedScheduler()
        let timers = TimerService(scheduler: scheduler)
        try timers.schedule(after: .milliseconds(5)) {}
        for index in 0..<1_000 {
            try timers.schedule(after: .milliseconds(5 + Int64(index))) {}
        }
        #expect(scheduler.scheduleCalls == 1)
        try timers.schedule(after: .milliseconds(2)) {}
        #expect(scheduler.scheduleCalls == 2, "an earlier timer re-arms once")
        // Firing re-arms once per occupied slot, not once per timer or per tick.
        scheduler.base.advance(by: .seconds(2))
        #expect(scheduler.scheduleCalls <= 2 + 1_001)
        #expect(timers.pendingCount == 0)
    }

    @Test func farTimersArmAFarWakeUpNotOnePerTickOrRotation() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        for index in 0..<10_000 {
            try timers.schedule(after: .seconds(3_600) + .milliseconds(Int64(index))) {}
        }
        let armed = try #require(scheduler.nextDeadline)
        #expect(armed - start > .seconds(3_000), "the wake-up for hour-away timers is \(armed - start) away")
        // Ten virtual minutes pass with no wake-up at all.
        #expect(scheduler.advance(by: .seconds(600)) == 0)
        #expect(timers.wakeUpCount == 0)
        #expect(timers.pendingCount == 10_000)
    }

    @Test func wakeUpsToReachAFarTimerAreAtMostOnePerLevel() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = TestFlag()
        try timers.schedule(after: .seconds(86_400)) { fired.set() }
        let ran = scheduler.advance(by: .seconds(86_400))
        #expect(fired.isSet)
        #expect(timers.wakeUpCount == ran)
        #expect(ran <= WheelLevel.count, "\(ran) wake-ups for one timer a day away")
    }

    @Test func cancelPreventsTheCallbackAndReportsIt() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = TestCounter()
        let handle = try timers.schedule(after: .milliseconds(5)) { fired.increment() }
        #expect(handle.isPending)
        #expect(handle.cancel())
        #expect(!handle.cancel(), "a second cancel prevents nothing")
        #expect(timers.pendingCount == 0)
        scheduler.advance(by: .seconds(1))
        #expect(fired.value == 0)
    }

    @Test func cancelAfterTheCallbackRanReturnsFalse() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = TestCounter()
        let handle = try timers.schedule(after: .milliseconds(5)) { fired.increment() }
        scheduler.advance(by: .milliseconds(5))
        #expect(fired.value == 1)
        #expect(!handle.isPending)
        #expect(!handle.cancel())
    }

    @Test func cancellingFromInsideAnotherCallbackOfTheSameTurnWorks() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = TestCounter()
        let later = try timers.schedule(after: .milliseconds(6)) { fired.increment() }
        try timers.schedule(after: .milliseconds(5)) { #expect(later.cancel()) }
        scheduler.advance(by: .seconds(1))
        #expect(fired.value == 0)
    }

    @Test func aTimerScheduledFromACallbackForThePastRunsInAFollowingTurn() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let log = Log()
        try timers.schedule(after: .milliseconds(5)) {
            log.append("first", at: scheduler.now)
            _ = try? timers.schedule(after: .zero) { log.append("second", at: scheduler.now) }
        }
        scheduler.advance(by: .milliseconds(10))
        #expect(log.names == ["first", "second"])
        #expect(log.times[1] - log.times[0] <= .milliseconds(1))
    }

    @Test func scheduleAtAPastDeadlineRunsAtTheNextTick() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        scheduler.advance(by: .seconds(5))
        let log = Log()
        try timers.schedule(at: scheduler.now - .seconds(3)) { log.append("past", at: scheduler.now) }
        scheduler.advance(by: .milliseconds(1))
        #expect(log.names == ["past"])
    }

    @Test func schedulingBeyondMaximumPendingThrowsTooManyPending() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, maximumPending: 3)
        for _ in 0..<3 { try timers.schedule(after: .seconds(1)) {} }
        #expect(throws: TimerServiceError.tooManyPending(limit: 3)) {
            try timers.schedule(after: .seconds(1)) {}
        }
        scheduler.advance(by: .seconds(1))
        #expect(timers.pendingCount == 0)
        try timers.schedule(after: .seconds(1)) {}  // room again once they ran
        #expect(timers.pendingCount == 1)
    }

    @Test func stopDropsWhatDidNotRunCancelsTheWakeUpAndRejectsNewTimers() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = TestCounter()
        try timers.schedule(after: .milliseconds(1)) { fired.increment() }
        let handle = try timers.schedule(after: .seconds(1)) { fired.increment() }
        try timers.schedule(after: .seconds(100)) { fired.increment() }
        scheduler.advance(by: .milliseconds(1))
        #expect(fired.value == 1)
        #expect(timers.stop() == 2)
        #expect(timers.isStopped)
        #expect(scheduler.pendingCount == 0, "the armed wake-up was cancelled")
        #expect(!handle.cancel())
        #expect(throws: TimerServiceError.stopped) { try timers.schedule(after: .seconds(1)) {} }
        #expect(timers.stop() == 0)
        scheduler.advance(by: .seconds(200))
        #expect(fired.value == 1)
    }

    @Test func aBurstRunsAtMostCallbacksPerTurnAndLetsOtherWorkInBetween() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, callbacksPerTurn: 4)
        let log = LockedValue<[String]>([])
        for index in 0..<10 {
            try timers.schedule(after: .milliseconds(5)) {
                log.withLock { $0.append("timer-\(index)") }
                if index == 0 {
                    // Other work submitted while the burst runs must not wait for all of it.
                    try! scheduler.execute { log.withLock { $0.append("other") } }
                }
            }
        }
        scheduler.advance(by: .milliseconds(5))
        let order = log.withLock { $0 }
        #expect(order.count == 11)
        #expect(order.filter { $0.hasPrefix("timer") } == (0..<10).map { "timer-\($0)" })
        let other = try #require(order.firstIndex(of: "other"))
        #expect(other <= 8, "other work ran at position \(other) of \(order)")
        #expect(timers.pendingCount == 0)
    }

    @Test func stopDropsTheBacklogOfABurst() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, callbacksPerTurn: 3)
        let fired = TestCounter()
        for _ in 0..<10 {
            try timers.schedule(after: .milliseconds(5)) {
                if fired.increment() == 3 { #expect(timers.stop() == 7) }
            }
        }
        scheduler.advance(by: .milliseconds(10))
        #expect(fired.value == 3)
    }

    @Test func afterTheLastCancelAtMostOneStaleWakeUpRunsAndItDoesNothing() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let handles = try (0..<100).map { _ in try timers.schedule(after: .seconds(1)) {} }
        for handle in handles { #expect(handle.cancel()) }
        #expect(scheduler.pendingCount <= 1)
        #expect(scheduler.advance(by: .seconds(2)) <= 1)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func releasingTheServiceDropsItsTimersAndItsWakeUp() throws {
        let scheduler = VirtualScheduler()
        let fired = TestCounter()
        do {
            let timers = TimerService(scheduler: scheduler)
            try timers.schedule(after: .seconds(1)) { fired.increment() }
        }
        #expect(scheduler.pendingCount == 0)
        scheduler.advance(by: .seconds(2))
        #expect(fired.value == 0)
    }

    @Test func aHandleKeepsItsServiceAliveSoCancelStillWorks() throws {
        let scheduler = VirtualScheduler()
        let fired = TestCounter()
        var handle: TimerHandle?
        do {
            let timers = TimerService(scheduler: scheduler)
            handle = try timers.schedule(after: .seconds(1)) { fired.increment() }
        }
        scheduler.advance(by: .seconds(2))
        #expect(fired.value == 1)
        #expect(handle?.cancel() == false)
    }
}

// `stop()` ends every timer it finds, whatever path it was on.
extension TimerServiceTests {
    /// Made precise, due, then stopped from another timer's callback in the same turn: the stop
    /// ends it; the service is clean (and internal checks pass) and a new service is unaffected.
    @Test func aTimerMadePreciseAndDueWhenTheServiceStopsLeavesNothingBehind() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(100), callbacksPerTurn: 1)
        let ran = CallbackRecorder<String>("ran")
        try timers.schedule(after: .milliseconds(50), tolerance: .zero) {
            ran.record("stopper")
            _ = timers.stop()
        }
        let handle = try timers.schedule(after: .seconds(5)) { ran.record("made precise") }
        #expect(handle.reschedule(after: .milliseconds(50), tolerance: .zero) == .movedToNewDeadline)
        scheduler.advance(by: .seconds(1))
        #expect(ran.values == ["stopper"])
        #expect(handle.status == .stopped)
        #expect(timers.pendingCount == 0)
    }
}
