import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// TimeoutManager when its scheduler (or a worker) stops for good: every task in flight ends
/// `.schedulerShutDown` exactly once, later calls throw the typed error, nothing traps.
@Suite("TimeoutManager scheduler shutdown")
struct TimeoutManagerShutdownTests {
    static let reason = SchedulingError.shutDown(scheduler: "virtual")

    /// Outcomes as text, keyed by caller.
    final class Outcomes: Sendable {
        let list = LockedValue<[String]>([])
        func record(_ name: String) -> @Sendable (TimeoutOutcome<Int>) -> Void {
            { outcome in self.list.withLock { $0.append("\(name): \(outcome)") } }
        }
        var all: [String] { self.list.withLock { $0 } }
    }

    final class Pending: Sendable {
        let completions = LockedValue<[TimeoutCompletion<Int>]>([])
        func keep(_ completion: TimeoutCompletion<Int>) { self.completions.withLock { $0.append(completion) } }
        subscript(index: Int) -> TimeoutCompletion<Int> { self.completions.withLock { $0[index] } }
    }

    @Test(arguments: [ShutdownMode.drain, .cancelPending])
    func tasksInFlightEndWithTheReasonThroughTheHandler(mode: ShutdownMode) throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let outcomes = Outcomes()
        let pending = Pending()
        try manager.start(taskKey: "k", timeout: .seconds(5), operation: pending.keep, completion: outcomes.record("a"))
        try manager.start(taskKey: "k", timeout: .seconds(5), operation: pending.keep, completion: outcomes.record("a2"))
        try manager.start(timeout: .seconds(5), operation: pending.keep, completion: outcomes.record("b"))
        scheduler.shutdown(mode)
        let text = "schedulerShutDown(\(Self.reason))"
        #expect(outcomes.all == ["a: \(text)", "a2: \(text)", "b: \(text)"])
        #expect(manager.inFlightCount == 0)
        #expect(pending[0].succeed(1) == false, "a result after the end is late")
        #expect(manager.lateResultCount == 1)
        #expect(outcomes.all.count == 3)
        #expect(throws: TimeoutManagerError.schedulerShutDown(Self.reason)) {
            try manager.start(timeout: .seconds(1), operation: { _ in }, completion: outcomes.record("c"))
        }
    }

    /// A result racing the shutdown: its delivery is refused before the handler ran. The
    /// task (and every other in flight) ends `.schedulerShutDown` on the reporting thread.
    @Test func aResultWhoseDeliveryIsRefusedEndsEveryTaskWithTheReason() throws {
        let scheduler = RefusingScheduler(label: "virtual")
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let outcomes = Outcomes()
        let pending = Pending()
        try manager.start(timeout: .seconds(5), operation: pending.keep, completion: outcomes.record("a"))
        try manager.start(timeout: .seconds(5), operation: pending.keep, completion: outcomes.record("b"))
        scheduler.refuse()
        #expect(pending[1].succeed(2))
        let text = "schedulerShutDown(\(Self.reason))"
        #expect(outcomes.all == ["b: \(text)", "a: \(text)"])
        scheduler.base.shutdown()  // the handler, later, finds nothing left
        #expect(outcomes.all.count == 2)
        #expect(throws: TimeoutManagerError.schedulerShutDown(Self.reason)) {
            try manager.start(timeout: .seconds(1), operation: { _ in }, completion: outcomes.record("c"))
        }
    }

    /// A deadline refused while starting: the call does not throw (its completion already has
    /// its outcome) and the operation is not started.
    @Test func aRefusedDeadlineEndsTheNewTaskWithoutStartingIt() throws {
        let scheduler = RefusingScheduler(label: "virtual")
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let outcomes = Outcomes()
        let pending = Pending()
        scheduler.refuse()
        let start = try manager.start(timeout: .seconds(5), operation: pending.keep, completion: outcomes.record("a"))
        #expect(start == .started)
        #expect(pending.completions.withLock { $0.isEmpty })
        #expect(outcomes.all == ["a: schedulerShutDown(\(Self.reason))"])
    }

    /// A worker that is gone ends its task with a reason naming the worker, on the scheduler.
    @Test func aWorkerThatRefusesEndsItsTaskWithTheWorkersReason() throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let worker = VirtualScheduler(label: "worker")
        worker.shutdown()
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [worker])
        let outcomes = Outcomes()
        try manager.run(timeout: .seconds(5), operation: { 1 }, completion: outcomes.record("a"))
        scheduler.runUntilIdle()
        #expect(outcomes.all == ["a: schedulerShutDown(\(SchedulingError.shutDown(scheduler: "worker")))"])
        #expect(manager.inFlightCount == 0)
    }

    /// On a shut-down SerialQueue the manager throws the typed error; nothing traps
    /// (it used to report "asyncAfter after shutdown").
    @Test func onAShutDownSerialQueueStartThrowsTheTypedError() throws {
        let queue = SerialQueue(label: "timeouts-shut")
        queue.shutdown()
        let manager = TimeoutManager<Int>(scheduler: queue, workerCount: 1, label: "timeouts-shut-worker")
        let reason = SchedulingError.shutDown(scheduler: "timeouts-shut")
        #expect(throws: TimeoutManagerError.schedulerShutDown(reason)) {
            try manager.start(timeout: .seconds(1), operation: { _ in }) { _ in }
        }
    }

    @Test func aTaskPendingWhenTheSerialQueueShutsDownEndsOnceWithTheReason() throws {
        let queue = SerialQueue(label: "timeouts-live")
        let manager = TimeoutManager<Int>(scheduler: queue, workerCount: 1, label: "timeouts-live-worker")
        let outcomes = Outcomes()
        try manager.start(timeout: .seconds(60), operation: { _ in }, completion: outcomes.record("a"))
        queue.shutdown()  // returns after the handlers ran on the worker
        #expect(outcomes.all == ["a: schedulerShutDown(\(SchedulingError.shutDown(scheduler: "timeouts-live")))"])
    }

    @Test func shutdownAfterTheSchedulerIsGoneDeliversCancelledOnTheCaller() throws {
        let scheduler = RefusingScheduler(label: "virtual")
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let outcomes = Outcomes()
        try manager.start(timeout: .seconds(5), operation: { _ in }, completion: outcomes.record("a"))
        scheduler.refuse()
        #expect(manager.shutdown() == 1)
        #expect(outcomes.all == ["a: cancelled"])
    }

    @Test func makeCreatesAWorkingManager() async throws {
        let scheduler = VirtualScheduler()
        let manager = try TimeoutManager<Int>.make(scheduler: scheduler, workerCount: 2, label: "made")
        let outcomes = Outcomes()
        let pending = Pending()
        try manager.start(timeout: .seconds(1), operation: pending.keep, completion: outcomes.record("a"))
        scheduler.advance(by: .seconds(1))
        #expect(outcomes.all == ["a: timedOut"])
    }

    /// A result whose delivery the scheduler accepted and then dropped (.cancelPending): the
    /// shutdown handler still delivers it, once, as `.schedulerShutDown`.
    @Test func aDeliveryDroppedByCancelPendingStillEndsTheTaskOnce() throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let outcomes = Outcomes()
        let pending = Pending()
        try manager.start(timeout: .seconds(5), operation: pending.keep, completion: outcomes.record("a"))
        #expect(pending[0].succeed(1))  // decided; its delivery waits on the scheduler
        scheduler.shutdown(.cancelPending)
        #expect(outcomes.all == ["a: schedulerShutDown(\(Self.reason))"])
        scheduler.runUntilIdle()
        #expect(outcomes.all.count == 1)
    }

    /// `shutdown()`'s `.cancelled` deliveries dropped by the scheduler still arrive, once.
    @Test func cancelledDeliveriesDroppedByTheSchedulerStillArrive() throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let outcomes = Outcomes()
        try manager.start(timeout: .seconds(5), operation: { _ in }, completion: outcomes.record("a"))
        #expect(manager.shutdown() == 1)
        scheduler.shutdown(.cancelPending)
        #expect(outcomes.all == ["a: cancelled"])
    }
}
