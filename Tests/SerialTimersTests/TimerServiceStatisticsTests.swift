import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// TimerService's figures in the common `ServiceStatistics` shape, on virtual time.
@Suite("TimerService statistics")
struct TimerServiceStatisticsTests {
    @Test func eachTimerIsCountedOnceWhenScheduledAndOnceAtItsEnd() throws {
        let scheduler = InstrumentedScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(1))
        try timers.schedule(after: .milliseconds(5)) {}  // fires on time
        let cancelled = try timers.schedule(after: .milliseconds(10)) {}
        scheduler.delayNextWakeUp(by: .milliseconds(3))
        try timers.schedule(after: .milliseconds(2)) {}  // due at tick 2, expired at tick 5: late
        let repeating = try timers.schedule(every: .seconds(1)) {}
        try timers.schedule(after: .seconds(3600)) {}  // stopped
        var statistics = timers.serviceStatistics
        #expect(statistics.accepted == 5)
        #expect(statistics.pending == 5)
        #expect(statistics.ended == 0)

        #expect(cancelled.cancel())
        scheduler.base.advance(by: .milliseconds(5))
        scheduler.base.advance(by: .seconds(3))  // three periods: the repeating timer has not ended
        #expect(repeating.cancel())
        statistics = timers.serviceStatistics
        #expect(statistics.outcomes == ["fired": 2, "cancelled": 2, "stopped": 0, "schedulerShutDown": 0])
        #expect(statistics.late == 1)
        #expect(statistics.pending == 1)
        #expect(statistics.pending == timers.pendingCount)
        #expect(statistics.wakeUps == timers.wakeUpCount)
        #expect(statistics.wakeUps > 0)

        #expect(timers.stop() == 1)
        #expect(throws: TimerServiceError.stopped) { try timers.schedule(after: .seconds(1)) {} }  // refused: not accepted
        statistics = timers.serviceStatistics
        #expect(statistics.accepted == 5)
        #expect(statistics.outcomes == ["fired": 2, "cancelled": 2, "stopped": 1, "schedulerShutDown": 0])
        #expect(statistics.pending == 0)
        #expect(statistics.accepted == statistics.pending + statistics.ended)
    }

    @Test func timersEndedByTheSchedulersShutdownAreCountedSo() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        try timers.schedule(after: .seconds(1)) {}
        try timers.schedule(after: .seconds(2)) {}
        scheduler.advance(by: .seconds(1))
        scheduler.shutdown()
        let statistics = timers.serviceStatistics
        #expect(statistics.accepted == 2)
        #expect(statistics.outcomes == ["fired": 1, "cancelled": 0, "stopped": 0, "schedulerShutDown": 1])
        #expect(statistics.late == 0)
        #expect(statistics.pending == 0)
        #expect(statistics.accepted == statistics.pending + statistics.ended)
    }
}
