import SerialCore
import SerialRequests
import SerialTesting
import Synchronization
import Testing

@Suite("RequestQueue cancel and timeouts: one completion, late answers ignored")
struct RequestQueueCancelAndTimeoutTests {
    @Test func cancellingAQueuedRequestEndsItAndItIsNeverSent() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: nil))
        harness.submit("blocker")
        let queued = harness.submit("queued")
        #expect(queued.cancel())
        #expect(queued.state == .failure)
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("queued")?.errorName == "cancelled")
        #expect(harness.server.sentNames == ["blocker"])
    }

    @Test func cancellingARunningRequestFreesItsSlotAtOnceAndItsLateAnswerIsIgnored() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: nil))
        let running = harness.submit("running", latency: .milliseconds(100))
        harness.submit("next", latency: .milliseconds(100))
        harness.advance(.milliseconds(50))
        #expect(running.cancel())
        harness.run()
        #expect(harness.recorder.only("running")?.errorName == "cancelled")
        #expect(harness.sendTimes("next") == [.milliseconds(50)])
        harness.advance(.seconds(1))
        #expect(harness.recorder.results("running").count == 1)
        #expect(harness.queue.statistics.ignoredAnswers == 1)
        #expect(harness.recorder.only("next")?.isSuccess == true)
    }

    @Test func cancelReturnsFalseOnceTheRequestHasEnded() {
        let harness = Harness()
        let handle = harness.submit("a")
        harness.advance(.seconds(1))
        #expect(!handle.cancel())
        let other = harness.submit("b")
        #expect(other.cancel())
        #expect(!other.cancel())
        harness.run()
        #expect(harness.recorder.results("a").count == 1)
        #expect(harness.recorder.results("b").count == 1)
    }

    @Test func cancellingAParkedRequestEndsItAndTheRefreshDoesNotResendIt() {
        let harness = Harness()
        harness.server.expireToken()
        let parked = harness.submit("parked")
        harness.submit("other")
        harness.advance(.milliseconds(15))
        #expect(harness.queue.parkedCount == 2)
        #expect(parked.cancel())
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("parked")?.errorName == "cancelled")
        #expect(harness.sendTimes("parked").count == 1)
        #expect(harness.recorder.only("other")?.isSuccess == true)
    }

    @Test func aRunningRequestTimesOutAtItsDeadlineAndItsAnswerIsIgnored() {
        let harness = Harness()
        harness.submit("slow", latency: .milliseconds(100), timeout: .milliseconds(50))
        harness.advance(.milliseconds(49))
        #expect(harness.recorder.results("slow").isEmpty)
        harness.advance(.milliseconds(1))
        guard case .failure(.timedOut(let after))? = harness.recorder.only("slow") else {
            Issue.record("expected timedOut, got \(harness.recorder.results("slow"))")
            return
        }
        #expect(after == .milliseconds(50))
        harness.advance(.seconds(1))
        #expect(harness.recorder.results("slow").count == 1)
        #expect(harness.queue.statistics.ignoredAnswers == 1)
    }

    @Test func theTimeoutCountsFromSubmitThroughQueueingAndRetries() {
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 1, retryBackoff: RetryBackoff(initial: .milliseconds(30), maximum: .seconds(1)),
                agingInterval: nil))
        harness.submit("blocker", latency: .milliseconds(40))
        harness.submit("flaky", statuses: [503, 503, 200], latency: .milliseconds(10), timeout: .milliseconds(100))
        harness.advance(.seconds(1))
        // queued 40 ms, sent at 40, answer 50, sent again at 80, answer 90, the next send would be
        // at 150: the timeout at 100 ends it first.
        #expect(harness.sendTimes("flaky") == [.milliseconds(40), .milliseconds(80)])
        #expect(harness.recorder.only("flaky")?.errorName == "timedOut")
    }

    @Test func aTimeoutAndAnAnswerDueAtTheSameInstantGiveExactlyOneCompletion() {
        let harness = Harness()
        for latency in [49, 50, 51] {
            harness.submit("r\(latency)", latency: .milliseconds(latency), timeout: .milliseconds(50))
        }
        harness.advance(.seconds(1))
        for latency in [49, 50, 51] {
            #expect(harness.recorder.results("r\(latency)").count == 1)
        }
        #expect(harness.recorder.only("r49")?.isSuccess == true)
        #expect(harness.recorder.only("r51")?.errorName == "timedOut")
    }

    @Test func aParkedRequestTimesOutWhileTheRefreshIsSlow() {
        let harness = Harness()
        harness.server.state.withLock { $0.refreshLatency = .seconds(5) }
        harness.server.expireToken()
        harness.submit("patient")
        harness.submit("hasty", timeout: .seconds(1))
        harness.advance(.seconds(10))
        #expect(harness.recorder.only("hasty")?.errorName == "timedOut")
        #expect(harness.recorder.only("patient")?.isSuccess == true)
        #expect(harness.sendTimes("hasty").count == 1)
    }

    @Test func aTransportThatAnswersTwiceStillGivesOneCompletion() {
        let harness = Harness()
        harness.server.state.withLock { $0.answerTwice = true }
        for index in 0..<10 { harness.submit("r\(index)", statuses: index % 2 == 0 ? [200] : [503, 200]) }
        harness.advance(.seconds(5))
        for index in 0..<10 { #expect(harness.recorder.results("r\(index)").count == 1) }
        #expect(harness.queue.statistics.ignoredAnswers > 0)
    }

    @Test func cancellingFromInsideAnObserverIsSafeAndStillGivesOneCompletion() {
        let harness = Harness()
        let victim = LockedValue<RequestHandle?>(nil)
        let cancelled = Atomic<Bool>(false)
        harness.queue.submit(
            Call(name: "trigger"),
            onStateChange: { state in
                if state == .running, let handle = victim.withLock({ $0 }) {
                    cancelled.store(handle.cancel(), ordering: .relaxed)
                }
            },
            completion: harness.recorder.completion("trigger"))
        victim.withLock { $0 = harness.submit("victim") }
        harness.advance(.seconds(1))
        let didCancel = cancelled.load(ordering: .relaxed)
        #expect(didCancel)
        #expect(harness.recorder.only("victim")?.errorName == "cancelled")
        #expect(harness.recorder.only("trigger")?.isSuccess == true)
    }

    @Test func observersSeeEveryStateChangeInOrderBeforeTheCompletion() {
        let harness = Harness()
        let events = LockedValue<[String]>([])
        harness.server.expireToken()
        harness.queue.submit(
            Call(name: "traced", statuses: [200, 503, 200]),  // the first send meets the expired token
            onStateChange: { state in events.withLock { $0.append("\(state)") } },
            completion: { result in events.withLock { $0.append("completion:\(result.state)") } })
        harness.advance(.seconds(5))
        #expect(events.withLock { $0 } == [
            "running", "redirect", "running", "retry", "running", "success", "completion:success",
        ])
    }
}
