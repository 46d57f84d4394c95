import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// Every trap of SerialTimers, run in a child process; each checks the message says what was wrong.
@Suite("SerialTimers traps")
struct TimersCrashTests {
    static func expectTrap(_ text: String, _ result: ExitTest.Result) {
        let message = result.standardErrorText
        #expect(message.contains(text), "stderr was: \(message)")
    }

    @Test func aZeroTickTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TimerService(scheduler: VirtualScheduler(), tick: .zero)
        }.map { Self.expectTrap("the tick must be at least one nanosecond", $0) }
    }

    @Test func aNegativeTickTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TimerService(scheduler: VirtualScheduler(), tick: .milliseconds(-1))
        }.map { Self.expectTrap("TimerService(tick: ", $0) }
    }

    @Test func aNegativeToleranceTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let timers = TimerService(scheduler: VirtualScheduler())
            _ = try? timers.schedule(after: .seconds(1), tolerance: .milliseconds(-1)) {}
        }.map { Self.expectTrap("TimerService: tolerance -0.001 seconds is negative; a timer never fires before", $0) }
    }

    @Test func aNegativeToleranceOnRescheduleTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let timers = TimerService(scheduler: VirtualScheduler())
            let handle = try? timers.schedule(after: .seconds(1)) {}
            _ = handle?.reschedule(after: .seconds(2), tolerance: .nanoseconds(-5))
        }.map { Self.expectTrap("is negative; a timer never fires before its deadline", $0) }
    }

    @Test func zeroCallbacksPerTurnTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TimerService(scheduler: VirtualScheduler(), callbacksPerTurn: 0)
        }.map { Self.expectTrap("TimerService(callbacksPerTurn: 0): at least one callback must run per turn", $0) }
    }

    @Test func zeroMaximumPendingTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TimerService(scheduler: VirtualScheduler(), maximumPending: 0)
        }.map { Self.expectTrap("TimerService(maximumPending: 0): the maximum must be at least 1", $0) }
    }

    @Test func aNegativeWheelCapacityTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TimingWheel<Int>(capacity: -1)
        }.map { Self.expectTrap("TimingWheel(capacity: -1): capacity must be zero or more", $0) }
    }

    @Test func aTimeoutManagerWithoutWorkersTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TimeoutManager<Int>(scheduler: VirtualScheduler(), workerCount: 0)
        }.map { Self.expectTrap("TimeoutManager(workerCount: 0): blocking operations need at least one worker", $0) }
    }

    @Test func anEmptyWorkerListTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TimeoutManager<Int>(scheduler: VirtualScheduler(), workers: [])
        }.map { Self.expectTrap("TimeoutManager(workers: []): blocking operations need at least one worker", $0) }
    }

    @Test func zeroMaximumInFlightTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let scheduler = VirtualScheduler()
            _ = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler], maximumInFlight: 0)
        }.map { Self.expectTrap("TimeoutManager(maximumInFlight: 0): the maximum must be at least 1", $0) }
    }

    @Test func aNegativeTimeoutTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let scheduler = VirtualScheduler()
            let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
            _ = try? manager.start(timeout: .seconds(-1), operation: { _ in }) { _ in }
        }.map { Self.expectTrap("TimeoutManager: timeout -1.0 seconds is negative", $0) }
    }

    @Test func aTimeoutManagerWithAZeroTickBlamesTheTimeoutManager() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let scheduler = VirtualScheduler()
            _ = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler], tick: .zero)
        }.map { Self.expectTrap("TimeoutManager(tick: 0.0 seconds): the tick must be at least one nanosecond", $0) }
    }

    @Test func aTimeoutManagerWithANegativeTickTrapsBeforeCreatingWorkers() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TimeoutManager<Int>(scheduler: VirtualScheduler(), workerCount: 1, tick: .milliseconds(-1))
        }.map { Self.expectTrap("TimeoutManager(tick: -0.001 seconds): the tick must be at least one nanosecond", $0) }
    }

    @Test func makeWithAZeroTickBlamesTheTimeoutManager() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try? TimeoutManager<Int>.make(scheduler: VirtualScheduler(), tick: .zero)
        }.map { Self.expectTrap("TimeoutManager(tick: 0.0 seconds)", $0) }
    }
}
