import SerialCore
import SerialPolling
import SerialTesting
import Testing

/// Poller's figures in the common `ServiceStatistics` shape, on virtual time.
@Suite("Poller statistics")
struct PollerStatisticsTests {
    struct Failure: Error {}

    static func outcomes(
        completed: Int = 0, failed: Int = 0, cancelled: Int = 0, schedulerShutDown: Int = 0
    ) -> [String: Int] {
        [
            "completed": completed, "failed": failed, "timedOut": 0, "cancelled": cancelled,
            "schedulerShutDown": schedulerShutDown,
        ]
    }

    @Test func eachSessionIsCountedOnceWhenStartedAndOnceByItsOutcome() {
        let scheduler = VirtualScheduler()
        let replies = ReplyBox()
        let policy = testPolicy(
            backoff: .init(minimumDelay: .milliseconds(100), maximumDelay: .seconds(1), maximumConsecutiveErrors: 1))
        let poller = Poller<Int>(
            policy: policy, scheduler: scheduler, isDone: { $0 >= 100 }, changes: .equality,
            query: .completion { attempt, reply in replies.keep(attempt, reply) })
        let recorder = PollRecorder<Int>(scheduler: scheduler)

        var session = recorder.start(poller)
        scheduler.runUntilIdle()
        replies.reply(session: session, attempt: 1, .success(100))  // completed
        scheduler.runUntilIdle()
        session = recorder.start(poller)
        scheduler.runUntilIdle()
        replies.reply(session: session, attempt: 1, .failure(Failure()))  // failed
        scheduler.runUntilIdle()
        session = recorder.start(poller)
        scheduler.runUntilIdle()
        #expect(poller.cancel())  // cancelled
        scheduler.runUntilIdle()
        session = recorder.start(poller)
        scheduler.runUntilIdle()
        var statistics = poller.serviceStatistics
        #expect(statistics.accepted == 4)
        #expect(statistics.pending == 1)
        #expect(statistics.outcomes == Self.outcomes(completed: 1, failed: 1, cancelled: 1))
        #expect(statistics.late == 0)

        scheduler.shutdown()  // the running session ends with the reason
        statistics = poller.serviceStatistics
        #expect(recorder.outcomes.map(\.kind) == ["completed", "failed", "cancelled", "schedulerShutDown"])
        #expect(statistics.outcomes == Self.outcomes(completed: 1, failed: 1, cancelled: 1, schedulerShutDown: 1))
        #expect(statistics.pending == 0)
        #expect(statistics.accepted == statistics.pending + statistics.ended)
    }
}
