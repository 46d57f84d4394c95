import SerialRequests
import SerialTesting
import Testing

@Suite("RequestQueue retries with backoff, and the cache")
struct RequestQueueRetryAndCacheTests {
    private static let configuration = TestQueue.Configuration(
        maximumRetries: 2, retryBackoff: RetryBackoff(initial: .milliseconds(100), multiplier: 2, maximum: .seconds(1)),
        agingInterval: nil)

    @Test func retryableFailuresAreSentAgainAfterAGrowingBackoff() {
        let harness = Harness(Self.configuration)
        harness.submit("flaky", statuses: [503, -1, 200], latency: .milliseconds(10))
        harness.advance(.seconds(5))
        // send 0 ms, answer 10 ms + 100 ms backoff; send 110 ms, answer 120 ms + 200 ms backoff.
        #expect(harness.sendTimes("flaky") == [.zero, .milliseconds(110), .milliseconds(320)])
        #expect(harness.recorder.only("flaky")?.isSuccess == true)
        #expect(harness.recorder.states("flaky") == [.running, .retry, .running, .retry, .running, .success])
        #expect(harness.queue.statistics.retries == 2)
    }

    @Test func aRequestThatStaysRetryableFailsAfterMaximumRetries() {
        let harness = Harness(Self.configuration)
        harness.submit("down", statuses: [503])
        harness.advance(.seconds(5))
        #expect(harness.server.sentNames.count == 3)
        guard case .failure(.retriesExhausted(let attempts, let last))? = harness.recorder.only("down") else {
            Issue.record("expected retriesExhausted, got \(harness.recorder.results("down"))")
            return
        }
        #expect(attempts == 3)
        #expect((last as? ServerSaidNo)?.status == 503)
    }

    @Test func retryDelayGrowsAndStopsAtTheMaximum() {
        let backoff = RetryBackoff(initial: .milliseconds(100), multiplier: 3, maximum: .milliseconds(500))
        #expect((1...4).map { backoff.delay(beforeRetry: $0) } == [
            .milliseconds(100), .milliseconds(300), .milliseconds(500), .milliseconds(500),
        ])
    }

    @Test func aWaitingRetryDoesNotHoldItsSlotOrItsKind() {
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 1, retryBackoff: RetryBackoff(initial: .seconds(1), maximum: .seconds(1)),
                agingInterval: nil))
        harness.submit("flaky", statuses: [503, 200], kind: "k")
        harness.submit("same-kind", kind: "k")
        harness.advance(.milliseconds(20))
        #expect(harness.sendTimes("same-kind") == [.milliseconds(10)])
        harness.advance(.seconds(2))
        #expect(harness.recorder.completedCount == 2)
    }

    @Test func aFatalStatusFailsAtOnceWithTheClassifiedError() {
        let harness = Harness(Self.configuration)
        harness.submit("broken", statuses: [500])
        harness.advance(.seconds(1))
        guard case .failure(.failed(let error))? = harness.recorder.only("broken") else {
            Issue.record("expected failed, got \(harness.recorder.results("broken"))")
            return
        }
        #expect((error as? ServerSaidNo)?.status == 500)
        #expect(harness.server.sentNames.count == 1)
    }

    @Test func useCacheServesTheCachedResponseAndEndsInUseCache() {
        let harness = Harness(Self.configuration)
        let cached = Reply(name: "feed", status: 200, token: 99)
        harness.cache.entries.withLock { $0["feed"] = cached }
        let handle = harness.submit("feed", statuses: [304])
        harness.advance(.seconds(1))
        guard case .cached(let reply)? = harness.recorder.only("feed") else {
            Issue.record("expected a cached reply, got \(harness.recorder.results("feed"))")
            return
        }
        #expect(reply == cached)
        #expect(handle.state == .useCache)
        #expect(harness.recorder.states("feed") == [.running, .useCache])
    }

    @Test func useCacheWithNothingCachedFailsWithCacheMiss() {
        let harness = Harness(Self.configuration)
        harness.submit("feed", statuses: [304])
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("feed")?.errorName == "cacheMiss")
    }

    @Test func freshResponsesAreOfferedToTheCacheBeforeTheirCompletion() {
        let harness = Harness(Self.configuration)
        harness.submit("a")
        harness.submit("b", statuses: [500])
        harness.advance(.seconds(1))
        #expect(harness.cache.stored.withLock { $0 } == ["a"])
    }
}
