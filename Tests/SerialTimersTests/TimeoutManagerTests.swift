import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// TimeoutManager on virtual time: one outcome per task, late results, keys, shutdown.
@Suite("TimeoutManager")
struct TimeoutManagerTests {
    struct Failure: Error, Equatable { let code: Int }

    /// Collects outcomes (as text, for easy comparison) and whether they ran on the scheduler.
    final class Outcomes: Sendable {
        let list = LockedValue<[String]>([])
        let offScheduler = TestCounter()
        func record(_ name: String, _ outcome: TimeoutOutcome<Int>, on scheduler: VirtualScheduler) {
            if !scheduler.isCurrent { self.offScheduler.increment() }
            self.list.withLock { $0.append("\(name): \(outcome)") }
        }
        var all: [String] { self.list.withLock { $0 } }
    }

    /// Hands the test the completion of a completion-based operation.
    final class Pending: Sendable {
        let completions = LockedValue<[TimeoutCompletion<Int>]>([])
        func keep(_ completion: TimeoutCompletion<Int>) { self.completions.withLock { $0.append(completion) } }
        subscript(index: Int) -> TimeoutCompletion<Int> { self.completions.withLock { $0[index] } }
    }

    func makeManager(_ scheduler: VirtualScheduler, maximumInFlight: Int = .max) -> TimeoutManager<Int> {
        TimeoutManager(scheduler: scheduler, workers: [scheduler], maximumInFlight: maximumInFlight)
    }

    @Test func aResultBeforeTheDeadlineCompletesTheTaskOnce() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler)
        let outcomes = Outcomes()
        let pending = Pending()
        try manager.start(timeout: .seconds(1), operation: pending.keep) { outcomes.record("a", $0, on: scheduler) }
        scheduler.advance(by: .milliseconds(400))
        #expect(pending[0].succeed(7))
        scheduler.advance(by: .seconds(5))
        #expect(outcomes.all == ["a: completed(7)"])
        #expect(outcomes.offScheduler.value == 0)
        #expect(manager.inFlightCount == 0)
        #expect(manager.lateResultCount == 0)
        #expect(scheduler.pendingCount == 0, "the deadline timer was cancelled with the task")
    }

    @Test func theDeadlineFirstGivesTimedOutAndTheLateResultIsDroppedAndCounted() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler)
        let start = scheduler.now
        let outcomes = Outcomes()
        let pending = Pending()
        let endedAt = LockedValue<MonotonicInstant?>(nil)
        try manager.start(timeout: .milliseconds(500), operation: pending.keep) { outcome in
            endedAt.withLock { $0 = scheduler.now }
            outcomes.record("a", outcome, on: scheduler)
        }
        scheduler.advance(by: .milliseconds(499))
        #expect(outcomes.all.isEmpty, "timed out early")
        scheduler.advance(by: .milliseconds(1))
        #expect(outcomes.all == ["a: timedOut"])
        #expect(endedAt.withLock { $0 } == start + .milliseconds(500))
        #expect(!pending[0].succeed(1))
        scheduler.advance(by: .seconds(1))
        #expect(outcomes.all == ["a: timedOut"])
        #expect(manager.lateResultCount == 1)
    }

    @Test func aFailureIsDeliveredAsFailed() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler)
        let outcomes = Outcomes()
        try manager.run(timeout: .seconds(1), operation: { throw Failure(code: 3) }) {
            outcomes.record("a", $0, on: scheduler)
        }
        scheduler.advance(by: .zero)
        #expect(outcomes.all == ["a: failed(Failure(code: 3))"])
    }

    @Test func aBlockingOperationRunsOnAWorkerAndItsResultArrivesOnTheScheduler() throws {
        let scheduler = VirtualScheduler()
        let worker = VirtualScheduler()
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [worker])
        let outcomes = Outcomes()
        let ranOnWorker = TestFlag()
        try manager.run(timeout: .seconds(1), operation: {
            if worker.isCurrent { ranOnWorker.set() }
            return 42
        }) { outcomes.record("a", $0, on: scheduler) }
        worker.runUntilIdle()
        #expect(ranOnWorker.isSet)
        #expect(outcomes.all.isEmpty, "the outcome waits for the scheduler's turn")
        scheduler.runUntilIdle()
        #expect(outcomes.all == ["a: completed(42)"])
        #expect(outcomes.offScheduler.value == 0)
    }

    @Test func anOperationWhoseTaskTimedOutWhileQueuedIsNeverStarted() throws {
        let scheduler = VirtualScheduler()
        let worker = VirtualScheduler()
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [worker])
        let outcomes = Outcomes()
        let started = TestCounter()
        try manager.run(timeout: .milliseconds(10), operation: { started.increment(); return 1 }) {
            outcomes.record("a", $0, on: scheduler)
        }
        scheduler.advance(by: .milliseconds(10))
        worker.runUntilIdle()
        scheduler.runUntilIdle()
        #expect(outcomes.all == ["a: timedOut"])
        #expect(started.value == 0)
        #expect(manager.skippedOperationCount == 1)
        #expect(manager.lateResultCount == 0)
    }

    @Test func aResultAndTheDeadlineAtTheSameInstantGiveExactlyOneOutcome() throws {
        for resultFirst in [true, false] {
            let scheduler = VirtualScheduler()
            let manager = self.makeManager(scheduler)
            let outcomes = Outcomes()
            let pending = Pending()
            // Both are due at 5 ms; the virtual scheduler runs ties in submission order, so
            // submitting the result before or after the task's deadline timer decides who wins.
            if resultFirst {
                try scheduler.schedule(after: .milliseconds(5)) { pending[0].succeed(1) }
            }
            try manager.start(timeout: .milliseconds(5), operation: pending.keep) { outcomes.record("a", $0, on: scheduler) }
            if !resultFirst {
                try scheduler.schedule(after: .milliseconds(5)) { pending[0].succeed(1) }
            }
            scheduler.advance(by: .seconds(1))
            #expect(outcomes.all == [resultFirst ? "a: completed(1)" : "a: timedOut"], "resultFirst \(resultFirst)")
            #expect(manager.lateResultCount == (resultFirst ? 0 : 1))
        }
    }

    @Test func aSecondTaskWithTheSameKeyJoinsTheFirstAndGetsTheSameOutcome() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler)
        let outcomes = Outcomes()
        let pending = Pending()
        let secondOperationRan = TestFlag()
        #expect(try manager.start(taskKey: "host", timeout: .seconds(1), operation: pending.keep) {
            outcomes.record("first", $0, on: scheduler)
        } == .started)
        #expect(try manager.start(taskKey: "host", timeout: .milliseconds(1), operation: { _ in secondOperationRan.set() }) {
            outcomes.record("second", $0, on: scheduler)
        } == .joined)
        #expect(manager.inFlightCount == 1)
        scheduler.advance(by: .milliseconds(100))
        #expect(outcomes.all.isEmpty, "the joined caller's own timeout is not used")
        pending[0].succeed(5)
        scheduler.runUntilIdle()
        #expect(outcomes.all == ["first: completed(5)", "second: completed(5)"])
        #expect(!secondOperationRan.isSet)
        // The key is free again once the task ended.
        #expect(try manager.start(taskKey: "host", timeout: .seconds(1), operation: pending.keep) {
            outcomes.record("third", $0, on: scheduler)
        } == .started)
    }

    @Test func joinedCallersOfATimedOutTaskAllTimeOut() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler)
        let outcomes = Outcomes()
        for name in ["a", "b", "c"] {
            try manager.start(taskKey: "k", timeout: .milliseconds(50), operation: { _ in }) {
                outcomes.record(name, $0, on: scheduler)
            }
        }
        scheduler.advance(by: .milliseconds(50))
        #expect(outcomes.all == ["a: timedOut", "b: timedOut", "c: timedOut"])
    }

    @Test func differentKeysAndUnkeyedTasksRunIndependently() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler)
        let outcomes = Outcomes()
        let pending = Pending()
        try manager.start(taskKey: "x", timeout: .seconds(1), operation: pending.keep) { outcomes.record("x", $0, on: scheduler) }
        try manager.start(taskKey: "y", timeout: .seconds(1), operation: pending.keep) { outcomes.record("y", $0, on: scheduler) }
        try manager.start(timeout: .seconds(1), operation: pending.keep) { outcomes.record("n1", $0, on: scheduler) }
        try manager.start(timeout: .seconds(1), operation: pending.keep) { outcomes.record("n2", $0, on: scheduler) }
        #expect(manager.inFlightCount == 4)
        for index in 0..<4 { pending[index].succeed(index) }
        scheduler.runUntilIdle()
        #expect(outcomes.all == ["x: completed(0)", "y: completed(1)", "n1: completed(2)", "n2: completed(3)"])
    }

    @Test func beyondMaximumInFlightStartThrowsAndNeverCallsTheCompletion() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler, maximumInFlight: 2)
        let outcomes = Outcomes()
        for _ in 0..<2 { try manager.start(timeout: .seconds(1), operation: { _ in }) { outcomes.record("ok", $0, on: scheduler) } }
        #expect(throws: TimeoutManagerError.tooManyInFlight(limit: 2)) {
            try manager.start(timeout: .seconds(1), operation: { _ in }) { outcomes.record("refused", $0, on: scheduler) }
        }
        // Joining a task in flight is always possible: it adds no task.
        scheduler.advance(by: .seconds(1))
        #expect(outcomes.all == ["ok: timedOut", "ok: timedOut"])
    }

    @Test func shutdownCancelsEveryTaskInFlightOnceAndRefusesNewOnes() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler)
        let outcomes = Outcomes()
        let pending = Pending()
        try manager.start(taskKey: "k", timeout: .seconds(1), operation: pending.keep) { outcomes.record("a", $0, on: scheduler) }
        try manager.start(taskKey: "k", timeout: .seconds(1), operation: pending.keep) { outcomes.record("a-joined", $0, on: scheduler) }
        try manager.start(timeout: .seconds(1), operation: pending.keep) { outcomes.record("b", $0, on: scheduler) }
        #expect(manager.shutdown() == 2)
        #expect(manager.shutdown() == 0)
        #expect(throws: TimeoutManagerError.shutDown) {
            try manager.start(timeout: .seconds(1), operation: { _ in }) { outcomes.record("late", $0, on: scheduler) }
        }
        scheduler.advance(by: .seconds(2))
        #expect(outcomes.all == ["a: cancelled", "a-joined: cancelled", "b: cancelled"])
        #expect(!pending[0].succeed(1))
        #expect(manager.lateResultCount == 1)
    }

    @Test func aResultReportedTwiceIsCountedLateOnce() throws {
        let scheduler = VirtualScheduler()
        let manager = self.makeManager(scheduler)
        let outcomes = Outcomes()
        try manager.start(timeout: .seconds(1), operation: { completion in
            completion(.success(1))
            completion(.failure(Failure(code: 2)))
        }) { outcomes.record("a", $0, on: scheduler) }
        scheduler.advance(by: .seconds(2))
        #expect(outcomes.all == ["a: completed(1)"])
        #expect(manager.lateResultCount == 1)
    }

    @Test(arguments: QueueMode.allCases) func theAsyncFaceReturnsTheOutcome(mode: QueueMode) async throws {
        let queue = mode.queue(label: "timeouts-async")
        let manager = TimeoutManager<Int>(scheduler: queue, workerCount: 1, label: "t-async")
        let outcome = try await manager.run(timeout: .seconds(30)) { 9 }
        #expect(outcome.value == 9)
    }
}
