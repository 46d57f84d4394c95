import SerialCore
import SerialRequests
import SerialTesting
import Testing

/// RequestQueue's figures in the common `ServiceStatistics` shape, derived from its own.
@Suite("RequestQueue service statistics")
struct RequestQueueServiceStatisticsTests {
    @Test func eachRequestIsCountedOnceWhenSubmittedAndOnceByHowItEnded() {
        let harness = Harness(TestQueue.Configuration(maximumRetries: 0, agingInterval: nil))
        harness.cache.entries.withLock { $0["cached"] = Reply(name: "cached", status: 200, token: 0) }
        harness.submit("ok")
        harness.submit("cached", statuses: [304])
        harness.submit("broken", statuses: [500])
        let cancelled = harness.submit("cancelled", latency: .seconds(10))
        harness.submit("slow", latency: .seconds(10), timeout: .milliseconds(50))
        harness.submit("unfinished", latency: .seconds(3600))
        #expect(cancelled.cancel())
        harness.advance(.seconds(1))
        var statistics = harness.queue.serviceStatistics
        #expect(statistics.accepted == 6)
        #expect(
            statistics.outcomes
                == ["succeeded": 1, "servedFromCache": 1, "cancelled": 1, "timedOut": 1, "failed": 1])
        #expect(statistics.pending == 1)
        #expect(statistics.pending == harness.queue.unfinishedCount)

        harness.queue.shutdown()
        harness.submit("refused")
        harness.run()
        statistics = harness.queue.serviceStatistics
        #expect(statistics.accepted == 7)
        #expect(
            statistics.outcomes
                == ["succeeded": 1, "servedFromCache": 1, "cancelled": 1, "timedOut": 1, "failed": 3])
        #expect(statistics.pending == 0)
        #expect(statistics.late == 0)
        #expect(statistics.wakeUps == 0)
        #expect(statistics.accepted == statistics.pending + statistics.ended)
    }
}
