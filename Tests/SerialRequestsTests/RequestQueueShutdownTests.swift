import SerialRequests
import SerialTesting
import Testing

@Suite("RequestQueue shutdown: every request ends once")
struct RequestQueueShutdownTests {
    @Test func shutdownEndsQueuedRunningParkedAndRetryingRequestsOnceEach() {
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 2, retryBackoff: RetryBackoff(initial: .seconds(5), maximum: .seconds(5)),
                agingInterval: nil))
        harness.submit("retrying", statuses: [503, 200], latency: .milliseconds(10))
        harness.advance(.milliseconds(10))  // now waiting out its backoff
        harness.submit("running", latency: .seconds(10))
        harness.submit("expiring", statuses: [401, 200], latency: .milliseconds(5))
        harness.advance(.milliseconds(5))  // parked behind a refresh
        harness.submit("queued", timeout: .seconds(60))
        #expect(harness.queue.unfinishedCount == 4)
        #expect(harness.queue.shutdown() == 4)
        harness.advance(.seconds(100))
        for tag in ["retrying", "running", "expiring", "queued"] {
            #expect(harness.recorder.only(tag)?.errorName == "shutDown", "\(tag): \(harness.recorder.results(tag))")
        }
        #expect(harness.recorder.order == ["retrying", "running", "expiring", "queued"], "submission order")
        #expect(harness.queue.runningCount == 0)
        #expect(harness.scheduler.pendingCount == 0, "timers cancelled, answers delivered and ignored")
    }

    @Test func aRequestSubmittedAfterShutdownEndsWithShutDownWithoutBeingSent() {
        let harness = Harness()
        harness.queue.shutdown()
        let handle = harness.submit("late")
        harness.run()
        #expect(harness.recorder.only("late")?.errorName == "shutDown")
        #expect(handle.state == .failure)
        #expect(harness.server.sentNames.isEmpty)
        #expect(harness.queue.shutdown() == 0)
    }

    @Test func answersAndRefreshesThatArriveAfterShutdownAreIgnored() {
        let harness = Harness()
        harness.server.expireToken()
        harness.submit("a", latency: .milliseconds(10))
        harness.submit("b", latency: .milliseconds(50))
        harness.advance(.milliseconds(15))  // a parked, refresh running until 35 ms
        harness.queue.shutdown()
        harness.advance(.seconds(1))
        #expect(harness.recorder.completedCount == 2)
        #expect(harness.queue.statistics.ignoredAnswers == 2, "b's answer and the refresh's")
        #expect(harness.server.refreshCalls == 1)
    }
}
