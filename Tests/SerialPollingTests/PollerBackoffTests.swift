import SerialCore
import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// Errors on virtual time: backoff with seeded full jitter, the error limit, reset on
/// success, server hints, attempt timeouts counted as errors.
@Suite("Poller backoff")
struct PollerBackoffTests {
    static let backoff = PollPolicy.Backoff(
        minimumDelay: .milliseconds(100), maximumDelay: .seconds(1), maximumConsecutiveErrors: 6)

    @Test(arguments: [UInt64(3), 17, 99, 1234])
    func errorsAreRetriedWithinBackoffBoundsThenFailWithTheLastError(seed: UInt64) {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { attempt in .error(ServerError(code: attempt)) }
        let poller = makePoller(
            server, policy: testPolicy(intervalMilliseconds: 10, backoff: Self.backoff), seed: seed)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))

        let starts = server.starts
        #expect(starts.count == 6, "seed \(seed)")
        var ceiling = Self.backoff.minimumDelay
        for index in 1..<starts.count {
            // Answers are immediate, so the gap between starts is the delay after error `index`.
            let delay = starts[index] - starts[index - 1]
            #expect(delay >= Self.backoff.minimumDelay && delay <= ceiling, "error \(index): \(delay), seed \(seed)")
            ceiling = min(ceiling * 2, Self.backoff.maximumDelay)
        }
        #expect(starts[1] - starts[0] == Self.backoff.minimumDelay, "the first retry waits exactly the minimum")
        #expect(recorder.outcomes.map(\.kind) == ["failed"])
        #expect((recorder.outcomes.first?.failure as? ServerError)?.code == 6, "not the last error")
        #expect(recorder.updates.isEmpty)
    }

    @Test func sameSeedGivesTheSameRetryTimes() {
        func run(seed: UInt64) -> [Int64] {
            let scheduler = VirtualScheduler()
            let server = SimulatedServer(scheduler: scheduler) { _ in .error(ServerError(code: 503)) }
            let poller = makePoller(server, policy: testPolicy(intervalMilliseconds: 10, backoff: Self.backoff), seed: seed)
            let origin = scheduler.now
            PollRecorder<Int>(scheduler: scheduler).start(poller)
            scheduler.advance(by: .seconds(60))
            return server.startOffsets(from: origin)
        }
        #expect(run(seed: 5) == run(seed: 5))
        let spread = Set((1...8).map { run(seed: $0) })
        #expect(spread.count > 1, "the jitter ignored the random source")
    }

    @Test func successResetsTheBackoff() {
        let scheduler = VirtualScheduler()
        let errors: Set<Int> = [1, 2, 4, 5]
        let server = SimulatedServer(scheduler: scheduler) { attempt in
            errors.contains(attempt) ? .error(ServerError(code: 500)) : .value(attempt == 6 ? 100 : attempt)
        }
        let backoff = PollPolicy.Backoff(
            minimumDelay: .milliseconds(100), maximumDelay: .seconds(1), maximumConsecutiveErrors: 3)
        let poller = makePoller(server, policy: testPolicy(intervalMilliseconds: 10, backoff: backoff), seed: 8)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))

        let starts = server.starts
        #expect(starts.count == 6)
        // Four errors in all, never three in a row: the success of attempt 3 reset the count.
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
        #expect(starts[3] - starts[2] == .milliseconds(10), "after a success: the plain interval")
        #expect(starts[4] - starts[3] == .milliseconds(100), "first error after a success: exactly the minimum")
    }

    @Test(arguments: [
        (Duration.milliseconds(20), Duration.milliseconds(100)),
        (.milliseconds(450), .milliseconds(450)),
        (.seconds(7), .seconds(1)),
    ])
    func serverRetryHintIsHonouredWithinTheBounds(hint: Duration, expected: Duration) {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(
            scheduler: scheduler, answers: [.error(ServerError(code: 429, retryAfter: hint)), .value(100)])
        let poller = makePoller(server, policy: testPolicy(intervalMilliseconds: 10, backoff: Self.backoff))
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))

        let starts = server.starts
        #expect(starts.count == 2)
        #expect(starts[1] - starts[0] == expected)
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
    }

    @Test func attemptTimeoutsCountAsErrors() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .silence }
        let backoff = PollPolicy.Backoff(
            minimumDelay: .milliseconds(100), maximumDelay: .seconds(1), maximumConsecutiveErrors: 3)
        let poller = makePoller(server, policy: testPolicy(attemptTimeout: .seconds(2), backoff: backoff))
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let origin = scheduler.now
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))

        #expect(server.queryCount == 3)
        #expect(recorder.outcomes.map(\.kind) == ["failed"])
        #expect(recorder.outcomes.first?.failure as? PollError == .attemptTimedOut(attempt: 3, after: .seconds(2)))
        #expect(recorder.outcomeTime.map { ($0 - origin).milliseconds } == (server.starts[2] - origin).milliseconds + 2000)
        #expect(scheduler.pendingCount == 0)
    }
}
