import SerialCore
import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// The overall deadline on virtual time: the last attempt is clamped to it, no query starts
/// at or after it, and it ends a poll even without per-attempt timeouts.
@Suite("Poller deadline")
struct PollerDeadlineTests {
    @Test func lastAttemptTimeoutIsClampedToTheDeadline() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .silence }
        let backoff = PollPolicy.Backoff(
            minimumDelay: .milliseconds(100), maximumDelay: .seconds(1), maximumConsecutiveErrors: 10)
        let poller = makePoller(
            server, policy: testPolicy(attemptTimeout: .seconds(1), deadline: .milliseconds(2500), backoff: backoff))
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let origin = scheduler.now
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))

        // Attempt 1: 0–1000 (times out), attempt 2: 1100–2100 (times out), attempt 3 starts
        // between 2200 and 2300 and would time out past 3200: it is cut to end at 2500.
        let attempts = server.attempts
        #expect(attempts.count == 3)
        #expect(attempts.map { $0.deadline.map { ($0 - origin).milliseconds } } == [1000, 2100, 2500])
        let third = (attempts[2].startedAt - origin).milliseconds
        #expect(third >= 2200 && third <= 2300)
        #expect(recorder.outcomes.map(\.kind) == ["timedOut"])
        #expect(recorder.outcomeTime.map { ($0 - origin).milliseconds } == 2500, "overshot or undershot the deadline")
        #expect(scheduler.pendingCount == 0)
    }

    @Test func queryThatWouldStartAtTheDeadlineIsNotStarted() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { attempt in .value(attempt * 10, after: .milliseconds(200)) }
        let poller = makePoller(server, policy: testPolicy(deadline: .seconds(3)))
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let origin = scheduler.now
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))

        #expect(server.startOffsets(from: origin) == [0, 1000, 2000])
        #expect(recorder.updates == [10, 20, 30])
        // The next start would be 3000, the deadline: the poll ends at once, at the last response.
        #expect(recorder.outcomes.map(\.kind) == ["timedOut"])
        #expect(recorder.outcomeTime.map { ($0 - origin).milliseconds } == 2200)
        #expect(recorder.outcomeIsLast)
    }

    @Test func deadlineEndsAPollWithoutAttemptTimeouts() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .silence }
        let poller = makePoller(server, policy: testPolicy(deadline: .seconds(5)))
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let origin = scheduler.now
        recorder.start(poller)
        scheduler.advance(by: .milliseconds(4999))
        #expect(recorder.outcomes.isEmpty)
        scheduler.advance(by: .seconds(60))

        #expect(server.queryCount == 1)
        #expect(server.attempts.first?.deadline.map { ($0 - origin).milliseconds } == 5000)
        #expect(recorder.outcomes.map(\.kind) == ["timedOut"])
        #expect(recorder.outcomeTime.map { ($0 - origin).milliseconds } == 5000)
    }

    @Test func firstQueryLaterThanTheDeadlineEndsThePollAtOnce() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .value(100) }
        var policy = testPolicy(intervalMilliseconds: 2000, deadline: .seconds(1))
        policy.startsImmediately = false
        let poller = makePoller(server, policy: policy)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()
        #expect(server.queryCount == 0)
        #expect(recorder.outcomes.map(\.kind) == ["timedOut"])
    }
}
