import SerialRequests
import SerialTesting
import Testing

@Suite("RequestQueue ordering: priorities, aging, unique gate, kinds, concurrency")
struct RequestQueueOrderingTests {
    @Test func higherPrioritiesStartFirstAndEqualPrioritiesInSubmissionOrder() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: nil))
        harness.submit("blocker")  // takes the only slot at once
        let plan: [(String, RequestPriority)] = [
            ("low1", .low), ("default1", .default), ("high1", .high), ("low2", .low), ("high2", .high),
            ("default2", .default),
        ]
        for (tag, priority) in plan { harness.submit(tag, priority: priority) }
        harness.advance(.seconds(1))
        #expect(harness.server.sentNames == ["blocker", "high1", "high2", "default1", "default2", "low1", "low2"])
        #expect(harness.recorder.completedCount == 7)
        #expect(harness.server.maximumInFlight == 1)
    }

    @Test func agingLetsALowRequestOvertakeNewerHighOnesAfterTwoIntervals() {
        // Highs answer every 100 ms; the low one reaches `high` after 2 s and, being older,
        // goes first at the dispatch at exactly 2 s: after the blocker and 19 highs.
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: .seconds(1)))
        harness.submit("blocker", latency: .milliseconds(100))
        harness.submit("low", priority: .low)
        for index in 0..<30 { harness.submit("high\(index)", latency: .milliseconds(100), priority: .high) }
        harness.advance(.seconds(10))
        let names = harness.server.sentNames
        #expect(names.firstIndex(of: "low") == 20)
        #expect(harness.sendTimes("low") == [.seconds(2)])
        #expect(harness.recorder.completedCount == 32)
    }

    @Test func withoutAgingTheLowRequestWaitsForEveryHighOne() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: nil))
        harness.submit("blocker", latency: .milliseconds(100))
        harness.submit("low", priority: .low)
        for index in 0..<30 { harness.submit("high\(index)", latency: .milliseconds(100), priority: .high) }
        harness.advance(.seconds(10))
        #expect(harness.server.sentNames.last == "low")
    }

    @Test func agingNeverLiftsARequestToUnique() {
        let low = RequestPriority.low.effectivePriority(waited: .seconds(1000), agingInterval: .seconds(1))
        #expect(low == .high)
        let almost = RequestPriority.default.effectivePriority(waited: .milliseconds(999), agingInterval: .seconds(1))
        #expect(almost == .default)
        #expect(RequestPriority.default.effectivePriority(waited: .seconds(1), agingInterval: .seconds(1)) == .high)
        #expect(RequestPriority.low.effectivePriority(waited: .seconds(1000), agingInterval: nil) == .low)
        #expect(RequestPriority.unique.effectivePriority(waited: .zero, agingInterval: .seconds(1)) == .unique)
    }

    @Test(arguments: [2, 4, 8])
    func aUniqueRequestStartsOnlyWhenNothingIsInFlightAndHoldsBackEverythingElse(maximum: Int) {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: maximum, agingInterval: nil))
        harness.submit("a", latency: .milliseconds(50))
        harness.submit("b", latency: .milliseconds(30))
        harness.submit("unique", latency: .milliseconds(100), priority: .unique)
        harness.submit("high", priority: .high)
        harness.run()
        // a and b were already in flight: the unique request waits for both, and holds back
        // high although slots are free.
        #expect(harness.server.sentNames == ["a", "b"])
        #expect(harness.queue.runningCount == 2)
        harness.advance(.milliseconds(49))
        #expect(harness.server.sentNames == ["a", "b"], "the unique request started with a still in flight")
        harness.advance(.milliseconds(1))
        #expect(harness.server.sentNames == ["a", "b", "unique"])
        #expect(harness.queue.runningCount == 1, "the unique request does not run alone")
        harness.advance(.milliseconds(99))
        #expect(harness.server.sentNames == ["a", "b", "unique"], "something started while the unique request ran")
        harness.advance(.milliseconds(1))
        #expect(harness.server.sentNames == ["a", "b", "unique", "high"])
        #expect(harness.sendTimes("unique") == [.milliseconds(50)])
        #expect(harness.sendTimes("high") == [.milliseconds(150)])
    }

    @Test func aQueuedUniqueRequestGoesBeforeOlderWorkAndOnlyOneUniqueRunsAtATime() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 2, agingInterval: nil))
        harness.submit("a", latency: .milliseconds(10))
        harness.submit("b", latency: .milliseconds(30))
        harness.submit("c", priority: .high)
        harness.submit("u1", latency: .milliseconds(40), priority: .unique)
        harness.submit("u2", latency: .milliseconds(40), priority: .unique)
        harness.advance(.seconds(1))
        // u1 waits until both a (10 ms) and b (30 ms) are done, although c is older and a slot
        // freed at 10 ms; u2 waits for u1; c runs only when no unique request is left.
        #expect(harness.server.sentNames == ["a", "b", "u1", "u2", "c"])
        #expect(harness.sendTimes("u1") == [.milliseconds(30)])
        #expect(harness.sendTimes("u2") == [.milliseconds(70)])
        #expect(harness.sendTimes("c") == [.milliseconds(110)])
    }

    @Test func atMostOneRequestOfAKindIsInFlightWhileOtherKindsProceed() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 4, agingInterval: nil))
        harness.submit("p1", latency: .milliseconds(50), kind: "profile")
        harness.submit("p2", latency: .milliseconds(50), kind: "profile")
        harness.submit("f1", latency: .milliseconds(50), kind: "feed")
        harness.submit("free", latency: .milliseconds(50))
        harness.run()
        #expect(harness.server.sentNames == ["p1", "f1", "free"])
        harness.advance(.seconds(1))
        #expect(harness.sendTimes("p2") == [.milliseconds(50)])
        #expect(harness.recorder.completedCount == 4)
    }

    @Test(arguments: [1, 3, 8])
    func neverMoreThanMaximumConcurrentRequestsAreInFlight(maximum: Int) {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: maximum, agingInterval: nil))
        for index in 0..<40 {
            let priority = RequestPriority(rawValue: index % 3)!
            harness.submit("r\(index)", latency: .milliseconds(5 + index % 7), priority: priority)
        }
        harness.advance(.seconds(5))
        #expect(harness.server.maximumInFlight == maximum)
        #expect(harness.recorder.completedCount == 40)
    }
}
