import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// TimeoutManager's figures in the common `ServiceStatistics` shape, on virtual time.
@Suite("TimeoutManager statistics")
struct TimeoutManagerStatisticsTests {
    struct Failure: Error {}

    /// Keeps the completions of completion-based operations for the test to report through.
    final class Pending: Sendable {
        let completions = LockedValue<[TimeoutCompletion<Int>]>([])
        func keep(_ completion: TimeoutCompletion<Int>) { self.completions.withLock { $0.append(completion) } }
        subscript(index: Int) -> TimeoutCompletion<Int> { self.completions.withLock { $0[index] } }
    }

    static func outcomes(
        completed: Int = 0, failed: Int = 0, timedOut: Int = 0, cancelled: Int = 0, schedulerShutDown: Int = 0
    ) -> [String: Int] {
        [
            "completed": completed, "failed": failed, "timedOut": timedOut, "cancelled": cancelled,
            "schedulerShutDown": schedulerShutDown,
        ]
    }

    @Test func eachTaskIsCountedOnceWhenStartedAndOnceByTheOutcomeItsCompletionsGet() throws {
        let scheduler = VirtualScheduler()
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let pending = Pending()
        try manager.start(timeout: .seconds(1), operation: pending.keep) { _ in }  // 0: completed
        try manager.run(timeout: .seconds(1), operation: { throw Failure() }) { _ in }  // failed
        try manager.start(timeout: .milliseconds(500), operation: pending.keep) { _ in }  // 1: timed out, then late
        try manager.start(taskKey: "k", timeout: .seconds(60), operation: pending.keep) { _ in }  // 2: cancelled
        #expect(try manager.start(taskKey: "k", timeout: .seconds(60), operation: pending.keep) { _ in } == .joined)
        #expect(pending[0].succeed(1))
        scheduler.advance(by: .seconds(1))
        #expect(!pending[1].succeed(2))
        var statistics = manager.serviceStatistics
        #expect(statistics.accepted == 4)
        #expect(statistics.outcomes == Self.outcomes(completed: 1, failed: 1, timedOut: 1))
        #expect(statistics.pending == 1)
        #expect(statistics.pending == manager.inFlightCount)
        #expect(statistics.late == 1)
        #expect(statistics.wakeUps > 0)

        #expect(manager.shutdown() == 1)
        scheduler.runUntilIdle()
        statistics = manager.serviceStatistics
        #expect(statistics.accepted == 4)
        #expect(statistics.outcomes == Self.outcomes(completed: 1, failed: 1, timedOut: 1, cancelled: 1))
        #expect(statistics.pending == 0)
        #expect(statistics.accepted == statistics.pending + statistics.ended)
    }

    /// A decided result whose delivery the scheduler dropped reaches its completions as
    /// `.schedulerShutDown`, and is counted so; tasks in flight too.
    @Test func theSchedulersShutdownCountsWhatItsCompletionsGet() throws {
        let scheduler = VirtualScheduler()
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let pending = Pending()
        let delivered = LockedValue<[String]>([])
        for _ in 0..<3 {
            try manager.start(timeout: .seconds(5), operation: pending.keep) { outcome in
                delivered.withLock { $0.append("\(outcome)") }
            }
        }
        #expect(pending[0].succeed(1))  // decided; its delivery waits on the scheduler
        scheduler.shutdown(.cancelPending)
        #expect(delivered.withLock { $0.allSatisfy { $0.hasPrefix("schedulerShutDown") } })
        let statistics = manager.serviceStatistics
        #expect(statistics.accepted == 3)
        #expect(statistics.outcomes == Self.outcomes(schedulerShutDown: 3))
        #expect(statistics.pending == 0)
        #expect(statistics.accepted == statistics.pending + statistics.ended)
    }
}
