import SerialCore
import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// Cadence on virtual time: next start = max(previous start + interval, previous response),
/// never two queries in flight, no idle gap.
@Suite("Poller cadence")
struct PollerCadenceTests {
    @Test func quickResponsesKeepTheIntervalBetweenStarts() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(
            scheduler: scheduler,
            answers: [10, 20, 30, 40, 100].map { .value($0, after: .milliseconds(200)) })
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let origin = scheduler.now
        recorder.start(poller)
        scheduler.advance(by: .seconds(10))

        #expect(server.startOffsets(from: origin) == [0, 1000, 2000, 3000, 4000])
        #expect(recorder.updates == [10, 20, 30, 40, 100])
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
        #expect(recorder.outcomes.first?.completedValue == 100)
        #expect(recorder.outcomeTime.map { ($0 - origin).milliseconds } == 4200)
    }

    @Test func slowResponseIsFollowedAtOnceWithoutIdleGap() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(
            scheduler: scheduler,
            answers: [
                .value(10, after: .milliseconds(200)), .value(20, after: .milliseconds(2500)),
                .value(30, after: .milliseconds(300)), .value(100, after: .milliseconds(100)),
            ])
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let origin = scheduler.now
        recorder.start(poller)
        scheduler.advance(by: .seconds(10))

        // Attempt 2 answers at 3500 (after 1000 + 2500): attempt 3 starts right then, not at 4000,
        // and attempt 4 keeps the interval from attempt 3's start.
        #expect(server.startOffsets(from: origin) == [0, 1000, 3500, 4500])
        #expect(server.maxInFlight == 1)
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
    }

    @Test func firstQueryWaitsOneIntervalWhenNotImmediate() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(50), .value(100)])
        var policy = testPolicy(intervalMilliseconds: 750)
        policy.startsImmediately = false
        let poller = makePoller(server, policy: policy)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let origin = scheduler.now
        recorder.start(poller)
        scheduler.advance(by: .milliseconds(749))
        #expect(server.queryCount == 0)
        scheduler.advance(by: .seconds(5))
        #expect(server.startOffsets(from: origin) == [750, 1500])
        #expect(recorder.updates == [50, 100])
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func randomLatenciesNeverOverlapAndLeaveNoIdleGap(seed: UInt64) {
        let scheduler = VirtualScheduler()
        let latencies = SeededLatencies(seed: seed, count: 40, upToMilliseconds: 3000)
        let server = SimulatedServer(scheduler: scheduler) { attempt in
            let delay = latencies.values[attempt - 1]
            // Every seventh answer is an error, to mix backoff into the cadence.
            if attempt % 7 == 0 { return .error(ServerError(code: 500), after: delay) }
            return .value(attempt == 40 ? 100 : attempt, after: delay)
        }
        let policy = testPolicy(
            backoff: .init(minimumDelay: .milliseconds(100), maximumDelay: .seconds(2), maximumConsecutiveErrors: 3))
        let poller = makePoller(server, policy: policy, seed: seed)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(1000))

        let starts = server.starts
        let replies = server.replies
        #expect(starts.count == 40, "seed \(seed)")
        #expect(server.maxInFlight == 1, "two queries were in flight at once (seed \(seed))")
        for index in 1..<starts.count {
            let cadence = max(starts[index - 1].advanced(by: .seconds(1)), replies[index - 1])
            #expect(starts[index] >= replies[index - 1], "attempt \(index + 1) started before the previous reply")
            if index % 7 != 0 {  // after a success: exactly the cadence, no idle gap
                #expect(starts[index] == cadence, "attempt \(index + 1), seed \(seed)")
            } else {  // after an error: the cadence pushed back by the backoff, within bounds
                let delay = starts[index] - replies[index - 1]
                #expect(starts[index] >= cadence && delay <= .seconds(2), "attempt \(index + 1), seed \(seed)")
            }
        }
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
        #expect(recorder.offSchedulerDeliveries == 0)
    }

    @Test func queryIsInvokedOnTheScheduler() {
        let scheduler = VirtualScheduler()
        let onScheduler = TestCounter()
        let poller = Poller<Int>(
            policy: testPolicy(), scheduler: scheduler, isDone: { $0 == 100 }, changes: .equality,
            query: .completion { _, reply in
                if scheduler.isCurrent { onScheduler.increment() }
                reply(.success(100))
            })
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        #expect(onScheduler.value == 0, "start ran the query on the caller's thread")
        scheduler.runUntilIdle()
        #expect(onScheduler.value == 1)
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
    }
}

/// Repeatable latencies in whole milliseconds.
struct SeededLatencies: Sendable {
    let values: [Duration]

    init(seed: UInt64, count: Int, upToMilliseconds limit: Int64) {
        var random = SeededRandom(seed: seed)
        self.values = (0..<count).map { _ in .milliseconds(Int64.random(in: 0...limit, using: &random)) }
    }
}
