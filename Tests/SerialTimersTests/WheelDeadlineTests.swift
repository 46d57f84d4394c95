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

        func value() async throws -> String { try await self.recorder.wait(forCount: 1, timeout: .seconds(120))[0] }
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

    /// A caller cancelled before the deadline gets what the operation throws, even when the
    /// operation throws only after the deadline has passed (its timer, tolerant, not run yet):
    /// what counts is when the caller was cancelled, not when the operation ended.
    @Test func aCallerCancelledBeforeTheDeadlineGetsTheOperationsErrorEvenWhenItEndsAfterIt() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let step = LockedValue<CheckedContinuation<Void, Never>?>(nil)
        let outcome = Outcome {
            try await withWheelDeadline(after: .milliseconds(100), tolerance: .seconds(1), clock: clock) {
                // A step that does not end at cancellation: it ends when the test says so.
                await withCheckedContinuation { continuation in step.withLock { $0 = continuation } }
                try Task.checkCancellation()
                return 1
            }
        }
        #expect(await eventually(timeout: .seconds(120)) { step.withLock { $0 != nil } }, "the operation never started")
        scheduler.advance(by: .milliseconds(50))
        outcome.task.cancel()  // before the deadline
        scheduler.advance(by: .milliseconds(100))  // +150 ms: past the deadline, inside its tolerance
        #expect(clock.timers.pendingCount == 1, "the deadline's timer fired inside its window: the case is not met")
        step.withLock { $0?.resume() }
        #expect(try await outcome.value() == "cancelled")
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

    @Test func aLaterInnerDeadlineArmsItsOwnTimerAndTheOuterOneGoverns() async throws {
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
        #expect(clock.timers.pendingCount == 3, "the outer deadline, the inner one and the sleep")
        scheduler.advance(by: .seconds(1))
        #expect(try await outcome.value() == "exceeded \(outer)")
        #expect(clock.timers.pendingCount == 0)
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
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        scheduler.advance(by: .nanoseconds(1))  // a past deadline: the next tick
        #expect(try await outcome.value() == "exceeded \(started)")
    }

    // MARK: Starting the operation: no hop

    /// The operation starts inside the call, on the caller's thread, and runs there until its
    /// first suspension: it is not a job queued behind the caller. On a one-thread `WorkerPool`
    /// as the tasks' executor, a task started just before the call is still waiting in the pool's
    /// run queue when the operation starts, and runs at the operation's first suspension. No
    /// timing: the run queue's order decides. (A child started by `addTask` queues behind it.)
    @Test func theOperationRunsOnTheCallersThreadUntilItsFirstSuspension() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let pool = WorkerPool(threads: 1, label: "deadline-caller")
        defer { pool.shutdown() }
        let order = CallbackRecorder<String>("order")
        let task = Task(executorPreference: pool) {
            let caller = CurrentThreadID.value
            let other = Task(executorPreference: pool) { order.record("a task queued before the call") }
            let value = try await withWheelDeadline(after: .seconds(60), clock: clock) {
                order.record(CurrentThreadID.value == caller ? "starts on the caller's thread" : "starts elsewhere")
                await Task.yield()  // the first suspension: the rest is a job behind that task
                order.record("resumes")
                return 1
            }
            order.record("returned \(value)")
            await other.value
        }
        let seen = try await order.wait(forCount: 4, timeout: .seconds(120))
        #expect(seen == ["starts on the caller's thread", "a task queued before the call", "resumes", "returned 1"])
        try await task.value
        #expect(clock.timers.pendingCount == 0)
    }

    /// An operation that never suspends has finished when the call's child task is added, and the
    /// call returns without a hop: nothing queued before it runs first.
    @Test func anOperationThatNeverSuspendsFinishesWithinTheCallersTurn() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let pool = WorkerPool(threads: 1, label: "deadline-caller")
        defer { pool.shutdown() }
        let order = CallbackRecorder<String>("order")
        let task = Task(executorPreference: pool) {
            let other = Task(executorPreference: pool) { order.record("a task queued before the call") }
            let value = try await withWheelDeadline(after: .seconds(60), clock: clock) { 7 }
            order.record("returned \(value)")
            await other.value
        }
        let seen = try await order.wait(forCount: 2, timeout: .seconds(120))
        #expect(seen == ["returned 7", "a task queued before the call"])
        try await task.value
        #expect(clock.timers.pendingCount == 0)
    }

    // MARK: Nesting: every call keeps its own deadline

    /// An unstructured `Task {}` inherits task-locals but not its creator's cancellation: a
    /// deadline inside it must arm its own timer, even within an earlier outer deadline (whose
    /// scope is over here before the inner one passes).
    @Test func aDeadlineInsideAnUnstructuredTaskIsEnforcedWithinAnEarlierOuterDeadline() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let inner = clock.now + .milliseconds(300)
        let innerOutcome = LockedValue<Outcome?>(nil)
        let outer = Outcome {
            try await withWheelDeadline(after: .milliseconds(100), clock: clock) {
                innerOutcome.withLock { slot in
                    slot = Outcome {
                        try await withWheelDeadline(at: inner, clock: clock) {
                            try await clock.sleep(for: .seconds(3))
                            return 1
                        }
                    }
                }
                return 0
            }
        }
        #expect(try await outer.value() == "value 0")
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        scheduler.advance(by: .milliseconds(300))
        #expect(scheduler.sleeperCount == 0, "nothing was cancelled at the inner deadline")
        scheduler.advance(by: .seconds(3))  // with no deadline, the sleep ends here and the call returns 1
        let outcome = try #require(innerOutcome.withLock { $0 })
        #expect(try await outcome.value() == "exceeded \(inner)", "the inner deadline was not enforced")
        #expect(clock.timers.pendingCount == 0)
    }

    /// Instants of two clocks are on different timelines: neither may stand for the other.
    /// Two virtual schedulers whose times are 1,000 s apart make both nesting orders exact.
    @Test(arguments: [false, true])
    func aDeadlineInsideOneOnAnotherClockKeepsItsOwnTimeline(outerTimelineIsEarlier: Bool) async throws {
        let early = VirtualScheduler(label: "early", startingAt: MonotonicInstant(nanoseconds: 1_000_000_000_000))
        let late = VirtualScheduler(label: "late", startingAt: MonotonicInstant(nanoseconds: 2_000_000_000_000))
        let (outerClock, innerScheduler) = outerTimelineIsEarlier ? (early.clock, late) : (late.clock, early)
        let innerClock = innerScheduler.clock
        let inner = innerClock.now + .seconds(1)
        let outcome = Outcome {
            try await withWheelDeadline(after: .seconds(60), clock: outerClock) {
                try await withWheelDeadline(at: inner, clock: innerClock) {
                    try await innerClock.sleep(for: .seconds(60))
                    return 1
                }
            }
        }
        try await innerScheduler.waitUntilAsleep(1, timeout: .seconds(120))
        innerScheduler.advance(by: .seconds(1))
        // The sleep was cancelled at once by the inner deadline; with no deadline it would end
        // here and the call return 1.
        innerScheduler.advance(by: .seconds(60))
        #expect(try await outcome.value() == "exceeded \(inner)")
        #expect(outerClock.timers.pendingCount == 0 && innerClock.timers.pendingCount == 0)
    }

    /// What governs is where each window ends (deadline + tolerance): a precise inner deadline
    /// inside an outer one with a wide tolerance passes first, and reports itself.
    @Test func aPreciseInnerDeadlineInsideAnEarlierButTolerantOuterOneFiresAtItsOwnDeadline() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let inner = clock.now + .milliseconds(150)
        let innerEnded = CallbackRecorder<MonotonicInstant>("inner deadline's end")
        let outcome = Outcome {
            try await withWheelDeadline(after: .milliseconds(100), tolerance: .seconds(2), clock: clock) {
                do {
                    return try await withWheelDeadline(at: inner, tolerance: .zero, clock: clock) {
                        try await clock.sleep(for: .seconds(60))
                        return 1
                    }
                } catch let error as WheelDeadlineExceeded {
                    innerEnded.record(clock.now)
                    return error.deadline == inner ? 2 : 3
                }
            }
        }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        scheduler.advance(by: .milliseconds(150))
        // The deadline's timer cancels the operation on the advancing thread, so its sleep ends at once.
        try #require(scheduler.sleeperCount == 0, "nothing was cancelled at the inner deadline")
        // Only after the inner call ended: a later advance would fire the outer deadline too.
        #expect(try await innerEnded.wait(forCount: 1, timeout: .seconds(120)) == [inner])
        #expect(try await outcome.value() == "value 2")
        #expect(clock.timers.pendingCount == 0)
    }
}
