import Logging
import SerialLifecycle
import SerialRuntime
import ServiceLifecycle
import Synchronization
import Testing

@Suite("swift-service-lifecycle integration")
struct LifecycleTests {
    /// Every accepted item ends once: async work runs, a timer fires or is dropped by the stop.
    private final class Outcomes: Sendable {
        let ran = Atomic<Int>(0)
        let fired = Atomic<Int>(0)
        let summary = Mutex<ShutdownSummary?>(nil)
    }

    private func makeService(
        worker: SerialQueue, timerQueue: SerialQueue, timers: TimerService, outcomes: Outcomes, logger: Logger
    ) -> SerialRuntimeService {
        SerialRuntimeService(
            logger: logger,
            stages: [.drain(worker), .stop(timers), .shutDown(worker), .shutDown(timerQueue)],
            onFinished: { summary in outcomes.summary.withLock { $0 = summary } })
    }

    private func accept(
        _ count: Int, worker: SerialQueue, timers: TimerService, outcomes: Outcomes
    ) throws {
        for index in 0..<count {
            worker.async { outcomes.ran.add(1, ordering: .relaxed) }
            // Half are due at once, half far away: a shutdown mid-work finds both kinds.
            let delay: Duration = index % 2 == 0 ? .zero : .seconds(3_600)
            _ = try timers.schedule(after: delay) { outcomes.fired.add(1, ordering: .relaxed) }
        }
    }

    @Test(arguments: [false, true])
    func aGroupShutDownMidWorkGivesEveryAcceptedItemOneOutcome(cancelInsteadOfGraceful: Bool) async throws {
        let store = RecordingLogHandler.Store()
        let logger = Logger.recording(into: store)
        let worker = SerialQueue(label: "lifecycle-worker")
        let timerQueue = SerialQueue(label: "lifecycle-timers")
        let timers = TimerService(scheduler: timerQueue)
        let outcomes = Outcomes()
        let service = self.makeService(
            worker: worker, timerQueue: timerQueue, timers: timers, outcomes: outcomes, logger: logger)
        let group = ServiceGroup(services: [service], logger: logger)
        let count = 200
        let running = Task { try await group.run() }
        try self.accept(count, worker: worker, timers: timers, outcomes: outcomes)
        if cancelInsteadOfGraceful {
            running.cancel()
        } else {
            await group.triggerGracefulShutdown()
        }
        try await running.value
        let summary = try #require(outcomes.summary.withLock { $0 }, "the service never reported its shutdown")
        let timerStage = try #require(summary.stages.first { $0.name == "stop timers" })
        #expect(outcomes.ran.load(ordering: .relaxed) == count, "accepted async work was lost")
        #expect(
            outcomes.fired.load(ordering: .relaxed) + timerStage.dropped == count,
            "fired \(outcomes.fired.load(ordering: .relaxed)) + dropped \(timerStage.dropped) ≠ \(count)")
        #expect(timerStage.dropped >= count / 2, "the far timers should have been dropped")
        #expect(worker.isShutDown && timerQueue.isShutDown)
        #expect(store.all.contains { $0.message.contains("shutdown complete") })
    }
}
