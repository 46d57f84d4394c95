import SerialRequests
import SerialTesting
import Testing

@Suite("RequestQueue async face")
struct RequestQueueAsyncTests {
    @Test func awaitingAResponseReturnsWhatTheCompletionWouldHaveReceived() async throws {
        let harness = Harness()
        async let result = harness.queue.response(for: Call(name: "a"), priority: .high)
        try await waitUntil { harness.queue.statistics.submitted == 1 }
        harness.advance(.seconds(1))
        let reply = try await result.get()
        #expect(reply.name == "a" && reply.status == 200)
    }

    @Test func cancellingTheTaskCancelsTheRequest() async throws {
        let harness = Harness()
        let task = Task { await harness.queue.response(for: Call(name: "slow", latency: .seconds(10))) }
        try await waitUntil { harness.queue.runningCount == 1 }
        task.cancel()
        try await waitUntil { harness.queue.unfinishedCount == 0 }
        harness.run()  // delivers the completion on the scheduler
        let result = await task.value
        #expect(result.errorName == "cancelled")
        harness.advance(.seconds(20))
        #expect(harness.queue.statistics.ignoredAnswers == 1)
    }
}

/// Yields until `condition` holds; fails after 100,000 yields instead of hanging.
private func waitUntil(_ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for _ in 0..<100_000 {
        if condition() { return }
        await Task.yield()
    }
    try #require(condition(), "condition still false after 100,000 yields", sourceLocation: sourceLocation)
}
