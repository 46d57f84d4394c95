import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// `withWheelDeadline` on virtual time: one timer, one outcome, nothing held after.
@Suite("withWheelDeadline")
struct WheelDeadlineTests {
    /// Runs `body` in a task and reports how it ended ("value N", "exceeded", "cancelled", or the
    /// error), with a timeout so that a lost outcome fails instead of hanging.
    final class Outcome: Sendable {
        let recorder = CallbackRecorder<String>("outcome")
        let task: Task<Void, Never>

        init(_ body: @escaping @Sendable () async throws -> Int) {
            let recorder = self.recorder
            self.task = Task {
                do {
                    recorder.record("value \(try await body())")
                } catch let error as WheelDeadlineExceeded {
                    recorder.record("exceeded \(error.deadline)")
                } catch is CancellationError {
                    recorder.record("cancelled")
                } catch {
                    recorder.record("\(error)")
                }
            }
        }

        func value() async throws -> String { try await self.recorder.wait(forCount: 1, timeout: .seconds(30))[0] }
    }

    @Test func anOperationThatFinishesInTimeReturnsItsValueAndLeavesNoTimer() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let outcome = Outcome { try await withWheelDeadline(after: .seconds(1), clock: clock) { 42 } }
        #expect(try await outcome.value() == "value 42")
        #expect(clock.timers.pendingCount == 0, "the deadline's timer outlived the call")
        #expect(clock.timers.serviceStatistics.outcomes["cancelled"] == 1)
    }

    @Test func anOperationStillRunningAtTheDeadlineIsCancelledAndTheCallThrowsDeadlineExceeded() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let deadline = clock.now + .seconds(2)
        let outcome = Outcome {
            try await withWheelDeadline(at: deadline, clock: clock) {
                try await clock.sleep(for: .seconds(60))  // cancelled by the deadline
                return 1
            }
        }
        try await scheduler.waitUntilAsleep(1)
        #expect(clock.timers.pendingCount == 2)  // the deadline and the sleep
        scheduler.advance(by: .seconds(2) - .nanoseconds(1))
        #expect(outcome.recorder.values.isEmpty, "the deadline passed early")
        scheduler.advance(by: .nanoseconds(1))
        #expect(try await outcome.value() == "exceeded \(deadline)")
        #expect(clock.timers.pendingCount == 0)
    }

    @Test func cancellingTheCallerStaysACancellationErrorNotADeadline() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let outcome = Outcome {
            try await withWheelDeadline(after: .seconds(5), clock: clock) {
                try await clock.sleep(for: .seconds(60))
                return 1
            }
        }
        try await scheduler.waitUntilAsleep(1)
        outcome.task.cancel()
        #expect(try await outcome.value() == "cancelled")
        #expect(clock.timers.pendingCount == 0)
    }

    @Test func aValueReturnedAfterTheDeadlineCancelledTheOperationIsReturned() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let outcome = Outcome {
            try await withWheelDeadline(after: .seconds(1), clock: clock) {
                do {
                    try await clock.sleep(for: .seconds(60))
                } catch {}  // ignores the cancellation and finishes anyway
                return 7
            }
        }
        try await scheduler.waitUntilAsleep(1)
        scheduler.advance(by: .seconds(1))
        #expect(try await outcome.value() == "value 7")
    }

    @Test func aLaterInnerDeadlineArmsNothingAndTheOuterOneGoverns() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let outer = clock.now + .seconds(1)
        let outcome = Outcome {
            try await withWheelDeadline(at: outer, clock: clock) {
                try await withWheelDeadline(after: .seconds(10), clock: clock) {
                    try await clock.sleep(for: .seconds(60))
                    return 1
                }
            }
        }
        try await scheduler.waitUntilAsleep(1)
        #expect(clock.timers.pendingCount == 2, "the later inner deadline armed a timer of its own")
        scheduler.advance(by: .seconds(1))
        #expect(try await outcome.value() == "exceeded \(outer)")
    }

    @Test func anEarlierInnerDeadlineFiresFirstAndReportsItself() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let inner = clock.now + .seconds(1)
        let outcome = Outcome {
            try await withWheelDeadline(after: .seconds(10), clock: clock) {
                do {
                    return try await withWheelDeadline(at: inner, clock: clock) {
                        try await clock.sleep(for: .seconds(60))
                        return 1
                    }
                } catch let error as WheelDeadlineExceeded {
                    return error.deadline == inner ? 2 : 3
                }
            }
        }
        try await scheduler.waitUntilAsleep(1)
        #expect(clock.timers.pendingCount == 3)
        scheduler.advance(by: .seconds(1))
        #expect(try await outcome.value() == "value 2")
        #expect(clock.timers.pendingCount == 0)
    }

    @Test func aDeadlineWhoseServiceStopsCancelsTheOperationAndSaysWhy() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let timers = TimerService(scheduler: scheduler)
        let outcome = Outcome {
            try await withWheelDeadline(after: .seconds(1), clock: WheelClock(timers: timers)) {
                try await clock.sleep(for: .seconds(60))
                return 1
            }
        }
        try await scheduler.waitUntilAsleep(1)
        timers.stop()
        #expect(try await outcome.value() == "\(TimerServiceError.stopped)")
    }

    @Test func aPassedDeadlineCancelsTheOperationAsItStarts() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let started = clock.now
        scheduler.advance(by: .seconds(1))
        let outcome = Outcome {
            try await withWheelDeadline(at: started, clock: clock) {
                try await clock.sleep(for: .seconds(60))
                return 1
            }
        }
        // The deadline's timer is armed before the operation starts, and the operation's sleep
        // arms before anything can fire: time moves only when this test says so.
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(30))
        scheduler.advance(by: .nanoseconds(1))  // a past deadline: the next tick
        #expect(try await outcome.value() == "exceeded \(started)")
    }
}
