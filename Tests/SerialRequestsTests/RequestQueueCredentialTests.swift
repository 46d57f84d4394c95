import SerialCore
import SerialRequests
import SerialTesting
import Testing

@Suite("RequestQueue credentials: single-flight refresh, re-sends, fan-out, loop guards")
struct RequestQueueCredentialTests {
    @Test func aThousandConcurrentExpiriesStartExactlyOneRefreshAndAllSucceedOnce() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1000, agingInterval: nil))
        for index in 0..<1000 { harness.submit("r\(index)", latency: .milliseconds(10)) }
        harness.run()
        #expect(harness.server.inFlight == 1000)
        harness.server.expireToken()
        harness.advance(.milliseconds(10))  // all 1000 answer 401 at once
        #expect(harness.queue.parkedCount == 1000)
        #expect(harness.server.refreshCalls == 1)
        harness.advance(.seconds(1))
        let statistics = harness.queue.statistics
        #expect(harness.server.refreshCalls == 1)
        #expect(statistics.refreshesStarted == 1)
        #expect(statistics.expiries == 1000)
        #expect(statistics.resentAfterRefresh == 1000)
        #expect(harness.queue.credentialGeneration == 1)
        for index in 0..<1000 {
            let results = harness.recorder.results("r\(index)")
            #expect(results.count == 1 && results[0].isSuccess, "r\(index): \(results)")
        }
        // Re-sent with the new credential, rebuilt for it.
        let resends = harness.server.sends.suffix(1000)
        #expect(resends.allSatisfy { $0.credential == 1 && $0.signedWith == 1 })
    }

    @Test func requestsSentWithAnOlderCredentialAreResentAtOnceWithoutAnotherRefresh() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 10, agingInterval: nil))
        harness.submit("fast", latency: .milliseconds(10))
        harness.submit("slow", latency: .milliseconds(100))
        harness.run()
        harness.server.expireToken()
        harness.advance(.seconds(1))
        // fast expires at 10 ms and raises the refresh (done at 30 ms); slow, sent with
        // generation 0, expires at 100 ms, after generation 1 exists: re-sent at 100 ms at once.
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.sendTimes("slow") == [.zero, .milliseconds(100)])
        #expect(harness.sendTimes("fast") == [.zero, .milliseconds(30)])
        #expect(harness.queue.statistics.resentWithoutRefresh == 1)
        #expect(harness.recorder.only("slow")?.isSuccess == true)
        #expect(harness.recorder.only("fast")?.isSuccess == true)
        #expect(harness.recorder.states("slow") == [.running, .redirect, .running, .success])
    }

    @Test func parkedRequestsAreResentInPriorityOrderAfterTheRefresh() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: nil))
        harness.server.expireToken()
        harness.submit("low", priority: .low)
        harness.advance(.milliseconds(10))  // low expires; refresh raised, runs until 30 ms
        harness.submit("default")
        harness.submit("high", priority: .high)
        harness.advance(.seconds(1))
        #expect(harness.server.sentNames == ["low", "high", "default", "low"])
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.recorder.completedCount == 3)
    }

    @Test func theRefreshPassesTheUniqueGateItRaisesEvenWithOneSlot() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: nil))
        harness.server.expireToken()
        harness.submit("login", priority: .unique)
        harness.submit("other", priority: .unique)
        harness.advance(.seconds(1))
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.recorder.only("login")?.isSuccess == true)
        #expect(harness.recorder.only("other")?.isSuccess == true)
        // The refresh went before the queued unique request "other".
        #expect(harness.server.sentNames == ["login", "login", "other"])
    }

    /// What `RequestPriority` says of the queue's own refresh: it does not wait for the requests
    /// already in flight (they were sent with the expired credential and end normally, re-sent at
    /// once if they meet the expiry after it), but no request starts while it waits or runs.
    @Test func theRefreshStartsWhileEarlierRequestsAreInFlightAndHoldsBackNewOnesUntilItEnds() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 4, agingInterval: nil))
        harness.submit("slow", latency: .seconds(1))
        harness.submit("fast")
        harness.run()
        harness.server.expireToken()
        harness.advance(.milliseconds(15))  // fast met the expired credential at 10 ms
        let refreshStarts = harness.server.state.withLock { $0.refreshStartedAt }.map { harness.start.duration(to: $0) }
        #expect(refreshStarts == [.milliseconds(10)], "the refresh waited for the request in flight")
        #expect(harness.server.inFlight == 1, "slow is still in flight beside the refresh")
        harness.submit("late")
        harness.advance(.milliseconds(10))  // 25 ms: the refresh (20 ms) still runs
        #expect(harness.sendTimes("late").isEmpty, "a request started while the refresh ran")
        harness.advance(.seconds(2))
        #expect(harness.sendTimes("late") == [.milliseconds(30)])
        #expect(harness.sendTimes("fast") == [.zero, .milliseconds(30)])
        #expect(harness.sendTimes("slow") == [.zero, .seconds(1)], "slow met the old credential: re-sent at once")
        #expect(harness.server.refreshCalls == 1)
        for tag in ["slow", "fast", "late"] { #expect(harness.recorder.only(tag)?.isSuccess == true, "\(tag)") }
    }

    @Test func whenTheRefreshFailsEachParkedRequestFailsOnceWithItsError() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 50, agingInterval: nil))
        harness.server.state.withLock { $0.refreshScript = [false, true] }
        for index in 0..<50 { harness.submit("r\(index)", latency: .milliseconds(10 + index % 5)) }
        harness.run()
        harness.server.expireToken()
        harness.advance(.seconds(1))
        #expect(harness.server.refreshCalls == 1)
        for index in 0..<50 {
            let results = harness.recorder.results("r\(index)")
            #expect(results.count == 1 && results[0].errorName == "refreshFailed", "r\(index): \(results)")
            if case .failure(.refreshFailed(let error)) = results.first {
                #expect(error is RefreshDenied)
            }
        }
        // A later expiry may try again; this time the refresh works.
        harness.submit("later")
        harness.advance(.seconds(1))
        #expect(harness.server.refreshCalls == 2)
        #expect(harness.recorder.only("later")?.isSuccess == true)
        #expect(harness.queue.statistics.refreshesFailed == 1)
    }

    @Test func aRefreshThatNeverAnswersFailsParkedRequestsAtTheRefreshTimeout() {
        let harness = Harness(
            TestQueue.Configuration(maximumConcurrent: 4, refreshTimeout: .seconds(2), agingInterval: nil))
        harness.server.state.withLock { $0.refreshLatency = nil }
        harness.server.expireToken()
        harness.submit("a")
        harness.submit("b")
        harness.advance(.seconds(1))
        #expect(harness.recorder.completedCount == 0)
        harness.advance(.seconds(2))
        #expect(harness.recorder.only("a")?.errorName == "refreshTimedOut")
        #expect(harness.recorder.only("b")?.errorName == "refreshTimedOut")
        #expect(harness.queue.runningCount == 0)
    }

    @Test func aRequestThatKeepsMeetingExpiredCredentialsStopsAtMaximumRedirects() {
        let harness = Harness(TestQueue.Configuration(maximumRedirects: 2, refreshLimit: 10, agingInterval: nil))
        harness.submit("looping", statuses: [401])
        harness.advance(.seconds(10))
        let result = harness.recorder.only("looping")
        #expect(result?.errorName == "tooManyRedirects")
        #expect(harness.server.sentNames == ["looping", "looping", "looping"])
        #expect(harness.server.refreshCalls == 2)
        #expect(harness.queue.unfinishedCount == 0)
    }

    @Test func theRefreshWindowRefusesARefreshBeyondItsLimit() {
        let harness = Harness(
            TestQueue.Configuration(
                maximumRedirects: 100, refreshLimit: 3, refreshWindow: .seconds(60), agingInterval: nil))
        harness.submit("looping", statuses: [401])
        harness.advance(.seconds(10))
        #expect(harness.recorder.only("looping")?.errorName == "refreshLimitExceeded")
        #expect(harness.server.refreshCalls == 3)
        #expect(harness.queue.statistics.refreshesRefused == 1)
        // Once the window has passed, refreshing is allowed again.
        harness.advance(.seconds(60))
        harness.server.expireToken()
        harness.submit("fresh")
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("fresh")?.isSuccess == true)
        #expect(harness.server.refreshCalls == 4)
    }

    @Test func requestsSubmittedBeforeARefreshAreRebuiltForTheNewCredential() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: nil))
        harness.server.expireToken()
        harness.submit("first")
        harness.submit("queued")
        harness.advance(.seconds(1))
        let queuedSend = harness.server.sends.first { $0.name == "queued" }
        #expect(queuedSend?.credential == 1)
        #expect(queuedSend?.signedWith == 1, "built for generation 0, rebuilt before its first send")
        #expect(harness.cache.rebuilds.load(ordering: .relaxed) == 2)
    }
}
