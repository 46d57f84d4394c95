import SerialCore
import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// The async form of the query: each attempt runs in its own task, cancelled when abandoned.
@Suite("Poller async query")
struct PollerAsyncQueryTests {
    @Test func asyncQueryResultsAreAppliedAtTheCadence() async {
        let scheduler = VirtualScheduler()
        let calls = TestCounter()
        let poller = Poller<Int>(
            policy: testPolicy(), scheduler: scheduler, isDone: { $0 >= 100 }, changes: .equality,
            query: .async { calls.increment() * 25 })
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        for attempt in 1...4 {
            scheduler.runUntilIdle()
            #expect(await until { poller._isWaiting || !poller.isRunning }, "attempt \(attempt) never answered")
            scheduler.advance(by: .seconds(1))
        }
        scheduler.runUntilIdle()
        #expect(calls.value == 4)
        #expect(recorder.updates == [25, 50, 75, 100])
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
    }

    @Test func timedOutAttemptCancelsItsTaskAndDropsItsAnswer() async {
        let scheduler = VirtualScheduler()
        let cancellations = TestCounter()
        let policy = testPolicy(
            attemptTimeout: .seconds(1),
            backoff: .init(minimumDelay: .milliseconds(100), maximumDelay: .seconds(1), maximumConsecutiveErrors: 1))
        let poller = Poller<Int>(
            policy: policy, scheduler: scheduler, isDone: { $0 >= 100 }, changes: .equality,
            query: .async {
                try await CancellationGate(countingIn: cancellations).wait()
                return 100
            })
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()
        scheduler.advance(by: .seconds(1))
        #expect(await until { cancellations.value == 1 }, "the abandoned attempt's task was not cancelled")
        #expect(await until { poller._droppedResponses == 1 }, "the cancelled task's answer was not dropped")
        #expect(recorder.outcomes.map(\.kind) == ["failed"])
        #expect(recorder.outcomes.first?.failure as? PollError == .attemptTimedOut(attempt: 1, after: .seconds(1)))
    }

    @Test func cancelCancelsTheInFlightTask() async {
        let scheduler = VirtualScheduler()
        let cancellations = TestCounter()
        let poller = Poller<Int>(
            policy: testPolicy(), scheduler: scheduler, isDone: { $0 >= 100 }, changes: .equality,
            query: .async {
                try await CancellationGate(countingIn: cancellations).wait()
                return 100
            })
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()
        #expect(poller.cancel())
        #expect(await until { cancellations.value == 1 }, "cancel() left the query's task running")
        scheduler.runUntilIdle()
        #expect(recorder.outcomes.map(\.kind) == ["cancelled"])
        #expect(recorder.updates.isEmpty)
    }
}
