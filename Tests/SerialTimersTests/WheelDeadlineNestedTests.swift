import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

// Nested deadlines, and the promise of exactly one outcome per call: its result, its own
// deadline exceeded, the caller's cancellation, or the end of the service or scheduler under it.
// Virtual time.
extension WheelDeadlineTests {
    /// Nested deadlines due at the same instant fire in one wake-up: the outer one first (armed
    /// first). The inner call's own timer also fires before its operation leaves: it throws
    /// `WheelDeadlineExceeded` with its own deadline, and the outer reports its own. Nothing stays.
    @Test func twoNestedDeadlinesAtTheSameInstantEachReportThemselves() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let deadline = clock.now + .milliseconds(100)
        let innerSaw = CallbackRecorder<String>("inner")
        let outcome = Outcome {
            try await withWheelDeadline(at: deadline, tolerance: .zero, clock: clock) {
                do {
                    return try await withWheelDeadline(at: deadline, tolerance: .zero, clock: clock) {
                        try await clock.sleep(for: .seconds(60))
                        return 1
                    }
                } catch let error as WheelDeadlineExceeded {
                    innerSaw.record("exceeded \(error.deadline)")
                    throw error
                } catch {
                    innerSaw.record("\(type(of: error))")
                    throw error
                }
            }
        }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        #expect(clock.timers.pendingCount == 3)
        scheduler.advance(by: .milliseconds(100))
        #expect(try await outcome.value() == "exceeded \(deadline)")
        #expect(try await innerSaw.wait(forCount: 1, timeout: .seconds(120)) == ["exceeded \(deadline)"])
        #expect(clock.timers.pendingCount == 0)
    }

    /// How the pair above can race: the caller is cancelled once the deadline has passed, before
    /// the deadline's own timer runs (the outer's callback ran first in that wake-up; the order
    /// of timers due at one instant is not kept). Here a gate, queued on the scheduler before the
    /// service's wake-up for that instant, cancels the caller and holds the wake-up until the call
    /// has left: the call still reports its own deadline, because it had passed.
    @Test func aCallerCancelledOnceItsDeadlinePassedBeforeTheTimerRanGetsDeadlineExceeded() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let deadline = clock.now + .milliseconds(100)
        let outcome = CallbackRecorder<String>("outcome")
        let started = CallbackRecorder<Task<Void, Never>>("task")
        let gate = CallbackRecorder<String>("gate")
        try scheduler.schedule(after: .milliseconds(100)) {
            guard let task = try? started.wait(forCount: 1, timeout: .seconds(120)).first else {
                return gate.record("no task")
            }
            task.cancel()
            let left = (try? outcome.wait(forCount: 1, timeout: .seconds(120))) != nil
            gate.record(left ? "the call left first" : "the call did not leave within 120 s")
        }
        // On a pool of the test's own: the call must leave while this test's thread is held inside
        // `advance`, whatever the cooperative pool is doing.
        started.record(
            Task(executorPreference: TestTasks.executor) {
                do {
                    _ = try await withWheelDeadline(at: deadline, tolerance: .zero, clock: clock) {
                        try await clock.sleep(for: .seconds(60))
                    }
                    outcome.record("returned")
                } catch let error as WheelDeadlineExceeded {
                    outcome.record("exceeded \(error.deadline)")
                } catch {
                    outcome.record("\(type(of: error))")
                }
            })
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        scheduler.advance(by: .milliseconds(100))
        #expect(try await gate.wait(forCount: 1, timeout: .seconds(120)) == ["the call left first"])
        #expect(try await outcome.wait(forCount: 1, timeout: .seconds(120)) == ["exceeded \(deadline)"])
        #expect(clock.timers.pendingCount == 0)
    }

    /// The caller cancelled before any deadline: `CancellationError`, and both timers freed.
    @Test func aCallerCancelledBeforeNestedDeadlinesGetsCancellationAndNothingStays() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let outcome = Outcome {
            try await withWheelDeadline(after: .seconds(1), clock: clock) {
                try await withWheelDeadline(after: .seconds(2), clock: clock) {
                    try await clock.sleep(for: .seconds(60))
                    return 1
                }
            }
        }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        outcome.task.cancel()
        #expect(try await outcome.value() == "cancelled")
        #expect(clock.timers.pendingCount == 0)
        #expect(scheduler.sleeperCount == 0)
        scheduler.advance(by: .seconds(5))
        #expect(outcome.recorder.count == 1, "a second outcome")
    }

    /// The service stops while a nested pair waits: each call throws `TimerServiceError.stopped`.
    @Test func aServiceStoppedUnderNestedDeadlinesEndsBothWithStopped() async throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .nanoseconds(1))
        let sleeper = scheduler.clock  // a sleep on another service, which keeps running
        let clock = WheelClock(timers: timers)
        let innerSaw = CallbackRecorder<String>("inner")
        let outcome = Outcome {
            try await withWheelDeadline(after: .seconds(1), clock: clock) {
                do {
                    return try await withWheelDeadline(after: .seconds(2), clock: clock) {
                        try await sleeper.sleep(for: .seconds(60))
                        return 1
                    }
                } catch {
                    innerSaw.record("\(error)")
                    throw error
                }
            }
        }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        #expect(timers.pendingCount == 2)
        _ = timers.stop()
        let inner = try await innerSaw.wait(forCount: 1, timeout: .seconds(120))
        #expect(inner == ["\(TimerServiceError.stopped)"])
        #expect(try await outcome.value() == "\(TimerServiceError.stopped)")
        #expect(timers.pendingCount == 0 && scheduler.sleeperCount == 0)
    }

    /// An operation whose sleep ends at the deadline's very instant: one outcome, nothing left.
    @Test func anOperationEndingAtTheDeadlinesInstantHasExactlyOneOutcome() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let deadline = clock.now + .seconds(1)
        let outcome = Outcome {
            try await withWheelDeadline(at: deadline, tolerance: .zero, clock: clock) {
                try await clock.sleep(until: deadline, tolerance: .zero)
                return 1
            }
        }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        scheduler.advance(by: .seconds(1))
        let value = try await outcome.value()
        #expect(value == "exceeded \(deadline)" || value == "value 1", "\(value)")
        scheduler.advance(by: .seconds(5))
        #expect(outcome.recorder.count == 1)
        #expect(clock.timers.pendingCount == 0)
    }

    /// The virtual scheduler shuts down while a nested pair waits on its clock: both calls end
    /// with `schedulerShutDown`, once, and nothing stays pending.
    @Test func aSchedulerShutDownUnderNestedDeadlinesEndsBothWithItsReason() async throws {
        let scheduler = VirtualScheduler(label: "attack-shutdown")
        let clock = scheduler.clock
        let innerSaw = CallbackRecorder<String>("inner")
        let outcome = Outcome {
            try await withWheelDeadline(after: .seconds(1), clock: clock) {
                do {
                    return try await withWheelDeadline(after: .seconds(2), clock: clock) {
                        try await clock.sleep(for: .seconds(60))
                        return 1
                    }
                } catch {
                    innerSaw.record("\(type(of: error))")
                    throw error
                }
            }
        }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        _ = scheduler.shutdown()
        #expect(try await innerSaw.wait(forCount: 1, timeout: .seconds(120)) == ["TimerServiceError"])
        let value = try await outcome.value()
        #expect(value.contains("shut down") || value.contains("shutDown"), "\(value)")
        #expect(clock.timers.pendingCount == 0)
        #expect(outcome.recorder.count == 1)
    }
}
