import SerialCore
@testable import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// A response from a superseded, timed-out or cancelled attempt, or from an earlier session,
/// is never applied; only the first reply of an attempt counts.
@Suite("Poller stale responses")
struct PollerStaleResponseTests {
    @Test func lateResponseOfATimedOutAttemptIsDropped() {
        let scheduler = VirtualScheduler()
        // Attempt 1 answers 50 after 1.5 s, but times out at 1 s; attempt 2 starts at 1.1 s
        // (interval 1 s, backoff minimum 100 ms) and answers 10 at 1.7 s. The stale 50 arrives
        // at 1.5 s, while attempt 2 is in flight.
        let server = SimulatedServer(
            scheduler: scheduler,
            answers: [.value(50, after: .milliseconds(1500)), .value(10, after: .milliseconds(600)), .value(100)])
        let poller = makePoller(server, policy: testPolicy(attemptTimeout: .seconds(1)))
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let origin = scheduler.now
        recorder.start(poller)
        scheduler.advance(by: .seconds(10))

        #expect(server.startOffsets(from: origin) == [0, 1100, 2100])
        #expect(recorder.updates == [10, 100], "the timed-out attempt's 50 was applied")
        #expect(poller._droppedResponses == 1)
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
    }

    @Test func onlyTheFirstReplyOfAnAttemptCounts() {
        let scheduler = VirtualScheduler()
        var first = SimulatedServer.Answer.value(30, after: .milliseconds(100))
        first.duplicates = [.success(90), .failure(ServerError(code: 500)), .success(100)]
        let server = SimulatedServer(scheduler: scheduler, answers: [first, .value(100)])
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(5))

        #expect(recorder.updates == [30, 100])
        #expect(server.queryCount == 2, "a duplicate reply started or ended an attempt")
        #expect(poller._droppedResponses == 3)
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
    }

    @Test func responseAfterCancelIsDroppedAndTheOutcomeStaysCancelled() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(100, after: .milliseconds(500))])
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .milliseconds(200))
        #expect(poller.cancel())
        scheduler.advance(by: .seconds(5))

        #expect(recorder.updates.isEmpty)
        #expect(recorder.outcomes.map(\.kind) == ["cancelled"])
        #expect(poller._droppedResponses == 1)
        #expect(scheduler.pendingCount == 0, "a timer was left armed after cancel")
    }

    @Test func responsesOfAnEarlierSessionAreIgnoredAfterRestart() {
        let scheduler = VirtualScheduler()
        // Session 1's only attempt answers 100 after 3 s; it is cancelled at 1 s and a new
        // session starts, whose first attempt answers 20 after 5 s.
        let server = SimulatedServer(scheduler: scheduler) { _ in .silence }
        let replies = ReplyBox()
        let poller = Poller<Int>(
            policy: testPolicy(), scheduler: scheduler, isDone: { $0 >= 100 }, changes: .equality,
            query: .completion { attempt, reply in
                _ = server
                replies.keep(attempt, reply)
            })
        let first = PollRecorder<Int>(scheduler: scheduler)
        let second = PollRecorder<Int>(scheduler: scheduler)
        let session1 = first.start(poller)
        scheduler.runUntilIdle()
        poller.cancel()
        scheduler.runUntilIdle()
        let session2 = second.start(poller)
        scheduler.runUntilIdle()
        #expect(session2 == session1 + 1)

        replies.reply(session: session1, attempt: 1, .success(100))  // stale: epoch 1
        scheduler.runUntilIdle()
        #expect(second.updates.isEmpty, "a reply of session 1 was applied to session 2")
        #expect(poller.isRunning)

        replies.reply(session: session2, attempt: 1, .success(100))
        scheduler.runUntilIdle()
        #expect(first.outcomes.map(\.kind) == ["cancelled"])
        #expect(first.updates.isEmpty)
        #expect(second.updates == [100])
        #expect(second.outcomes.map(\.kind) == ["completed"])
    }
}

/// Keeps each attempt's reply closure, so a test can answer any attempt at any time.
final class ReplyBox: Sendable {
    private let replies = LockedValue<[String: @Sendable (Result<Int, any Error>) -> Void]>([:])

    func keep(_ attempt: PollAttempt, _ reply: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        self.replies.withLock { $0["\(attempt.session).\(attempt.number)"] = reply }
    }

    func reply(session: UInt64, attempt: Int, _ result: Result<Int, any Error>) {
        let reply = self.replies.withLock { $0["\(session).\(attempt)"] }
        reply?(result)
    }

    var count: Int { self.replies.withLock { $0.count } }
}
