import SerialCore
import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// Exactly one outcome per session, whatever the race between a reply, a timeout and cancel,
/// delivered after every update of its session.
@Suite("Poller outcome")
struct PollerOutcomeTests {
    /// Three events fall due at the same virtual instant; the scheduler runs them in the order
    /// they were submitted, and the first one decides the outcome.
    @Test(arguments: [
        ["cancel", "reply", "timeout"], ["cancel", "timeout", "reply"], ["reply", "cancel", "timeout"],
        ["reply", "timeout", "cancel"], ["timeout", "cancel", "reply"], ["timeout", "reply", "cancel"],
    ])
    func firstOfCancelReplyAndTimeoutAtTheSameInstantDecidesTheOneOutcome(order: [String]) {
        let scheduler = VirtualScheduler()
        let replies = ReplyBox()
        let policy = testPolicy(
            attemptTimeout: .seconds(1),
            backoff: .init(minimumDelay: .milliseconds(100), maximumDelay: .seconds(1), maximumConsecutiveErrors: 1))
        let poller = Poller<Int>(
            policy: policy, scheduler: scheduler, isDone: { $0 >= 100 }, changes: .equality,
            query: .completion { attempt, reply in replies.keep(attempt, reply) })
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let cancelResult = LockedValue<Bool?>(nil)
        let due = scheduler.now.advanced(by: .seconds(1))
        var session: UInt64 = 0
        for event in order {
            switch event {
            case "cancel":
                try! scheduler.schedule(at: due) { cancelResult.withLock { $0 = poller.cancel() } }
            case "reply":
                try! scheduler.schedule(at: due) { replies.reply(session: 1, attempt: 1, .success(100)) }
            default:  // the attempt starts now, arming its timeout for `due`
                session = recorder.start(poller)
                scheduler.runUntilIdle()
            }
        }
        scheduler.advance(by: .seconds(10))

        #expect(session == 1)
        let expected = ["cancel": "cancelled", "reply": "completed", "timeout": "failed"][order[0]]!
        #expect(recorder.outcomes.map(\.kind) == [expected], "order \(order)")
        #expect(cancelResult.withLock { $0 } == (order[0] == "cancel"), "cancel() reported the wrong winner")
        #expect(recorder.outcomeIsLast)
        #expect(scheduler.pendingCount == 0)
        #expect(poller.isRunning == false)
    }

    @Test func updateDecidedBeforeCancelIsDeliveredBeforeTheOutcome() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(50, after: .milliseconds(100))])
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()  // attempt 1 starts; its reply falls due at 100 ms
        // Due at the same instant, submitted after the reply and before its delivery: the
        // update is decided, then the cancel, then both are delivered, in that order.
        try! scheduler.schedule(at: scheduler.now.advanced(by: .milliseconds(100))) { poller.cancel() }
        scheduler.advance(by: .seconds(5))
        #expect(recorder.updates == [50])
        #expect(recorder.outcomes.map(\.kind) == ["cancelled"])
        #expect(recorder.outcomeIsLast)
    }

    @Test func cancelWithNothingRunningReturnsFalse() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(100)])
        let poller = makePoller(server)
        #expect(poller.cancel() == false, "cancel before start")
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()
        #expect(poller.cancel() == false, "cancel after completion")
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
    }

    @Test func secondCancelReturnsFalseAndAddsNoOutcome() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .silence }
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()
        #expect(poller.cancel())
        #expect(poller.cancel() == false)
        scheduler.advance(by: .seconds(5))
        #expect(recorder.outcomes.map(\.kind) == ["cancelled"])
        #expect(poller.outcome.map(\.kind) == "cancelled")
    }

    @Test func pollCanBeRestartedFromItsOutcomeCallback() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .value(100) }
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let sessions = TestCounter()
        poller.start(onOutcome: { _ in
            sessions.increment()
            recorder.start(poller)
        })
        scheduler.advance(by: .seconds(5))
        #expect(sessions.value == 1)
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
        #expect(server.attempts.map(\.session) == [1, 2])
    }
}
