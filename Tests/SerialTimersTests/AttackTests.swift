import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// Attacks on issue 30's timer changes: `withWheelDeadline` arming a timer per call, a re-arm's
/// tolerance from a timer's own callback, and the test clock's count of sleepers. Virtual time.
@Suite("Attack: timers")
struct TimersAttackTests {
    typealias Outcome = WheelDeadlineTests.Outcome

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

    // MARK: Re-arming from the callback

    /// A default timer (tick 100 ms) made precise from its callback stays precise through later
    /// re-arms with `nil`, and one given a tick or more goes back to the wheel: every firing on
    /// the promised instant.
    @Test func reArmsFromTheCallbackKeepOrDropPrecisionAsThePendingPathDoes() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(100))
        let start = scheduler.now
        let fired = LockedValue<[Duration]>([])
        let box = LockedValue<TimerHandle?>(nil)
        // (delay, tolerance) for each re-arm after the n-th firing.
        let plan: [(Duration, Duration?)] = [
            (.milliseconds(10), .zero), (.milliseconds(15), nil), (.milliseconds(20), nil),
            (.milliseconds(30), .milliseconds(200)), (.milliseconds(30), nil),
        ]
        let handle = try timers.schedule(after: .milliseconds(100)) {
            let count = fired.withLock { fired in
                fired.append(start.duration(to: scheduler.now))
                return fired.count
            }
            guard count <= plan.count, let handle = box.withLock({ $0 }) else { return }
            let (delay, tolerance) = plan[count - 1]
            #expect(handle.reschedule(after: delay, tolerance: tolerance) == .movedToNewDeadline)
        }
        box.withLock { $0 = handle }
        scheduler.advance(by: .seconds(2))
        // 100; +10 = 110 precise; +15 = 125; +20 = 145; +30 with a wide window: the wheel's
        // one tick, due 175 -> tick 200; +30 = 230 -> tick 300.
        #expect(fired.withLock { $0 } == [100, 110, 125, 145, 200, 300].map { .milliseconds($0) })
        #expect(timers.pendingCount == 0)
    }

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

    // MARK: The test clock's sleepers

    /// A sleep whose deadline has passed is armed and counted like any other; cancelled sleeps
    /// and sleeps ended by a stop leave the count at zero, never negative.
    @Test func theSleeperCountFollowsArmedSleepsOnly() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let ended = CallbackRecorder<String>("ended")
        let past = Task {
            do { try await clock.sleep(until: clock.now - .seconds(1)); ended.record("past") } catch { ended.record("past \(error)") }
        }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        scheduler.advance(by: .nanoseconds(1))  // a past deadline: the next tick (1 ns here)
        #expect(try await ended.wait(forCount: 1, timeout: .seconds(120)) == ["past"])
        #expect(scheduler.sleeperCount == 0)
        let sleeps = (0..<5).map { index in
            Task {
                do { try await clock.sleep(for: .seconds(10)) } catch { ended.record("cancelled \(index)") }
            }
        }
        try await scheduler.waitUntilAsleep(5, timeout: .seconds(120))
        for task in sleeps { task.cancel() }
        _ = try await ended.wait(forCount: 6, timeout: .seconds(120))
        #expect(scheduler.sleeperCount == 0)
        // Cancelled before it starts: never counted.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            do { try await clock.sleep(for: .seconds(1)) } catch { ended.record("early") }
        }
        _ = try await ended.wait(forCount: 7, timeout: .seconds(120))
        #expect(scheduler.sleeperCount == 0)
        let stopped = Task { do { try await clock.sleep(for: .seconds(1)) } catch { ended.record("stopped") } }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        _ = clock.timers.stop()
        _ = try await ended.wait(forCount: 8, timeout: .seconds(120))
        #expect(scheduler.sleeperCount == 0)
        #expect(scheduler.sleeperCount >= 0)
        _ = (past, early, stopped)
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
