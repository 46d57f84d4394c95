import SerialCore
import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// Updates only on change, and never for progress that goes backwards.
@Suite("Poller change detection")
struct PollerChangeTests {
    private func updates(for values: [Int], progress: Bool) -> [Int] {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: values.map { .value($0) })
        let poller = makePoller(server, progress: progress)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
        return recorder.updates
    }

    @Test func unchangedValuesAreNotReported() {
        #expect(self.updates(for: [10, 10, 20, 20, 20, 100], progress: false) == [10, 20, 100])
    }

    @Test func progressThatGoesBackwardsIsNotReported() {
        #expect(self.updates(for: [10, 30, 20, 30, 40, 100], progress: true) == [10, 30, 40, 100])
    }

    @Test func withoutAProgressMeasureEveryChangeIsReported() {
        #expect(self.updates(for: [10, 30, 20, 40, 100], progress: false) == [10, 30, 20, 40, 100])
    }

    @Test func everyResponseReportsRepeatedValuesToo() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [10, 10, 20, 20, 100].map { .value($0) })
        let poller = Poller<Int>(
            policy: testPolicy(), scheduler: scheduler, isDone: { $0 >= 100 }, changes: .everyResponse,
            query: server.query)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))
        #expect(recorder.updates == [10, 10, 20, 20, 100])
        #expect(recorder.outcomes.map(\.kind) == ["completed"])
    }

    @Test func customComparisonDecidesWhatIsAChange() {
        struct Status: Sendable {
            var percent: Int
            var message: String
        }
        let scheduler = VirtualScheduler()
        let answers: [Status] = [
            .init(percent: 10, message: "copying"), .init(percent: 10, message: "still copying"),
            .init(percent: 60, message: "indexing"), .init(percent: 100, message: "done"),
        ]
        let attempt = TestCounter()
        let poller = Poller<Status>(
            policy: testPolicy(), scheduler: scheduler, isDone: { $0.percent == 100 },
            changes: .isSame { $0.percent == $1.percent },
            query: .completion { _, reply in reply(.success(answers[attempt.increment() - 1])) })
        let recorder = PollRecorder<Status>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))
        #expect(recorder.updates.map(\.message) == ["copying", "indexing", "done"])
        #expect(recorder.outcomes.first?.completedValue?.message == "done")
    }

    @Test func doneValueIsReportedOnceJustBeforeCompletion() {
        #expect(self.updates(for: [100], progress: true) == [100])
    }

    @Test func backwardsDoneValueStillCompletesWithoutAnUpdate() {
        // A lagging replica says "done" with a lower measure: the job is done, but the bar
        // does not move back.
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(90), .value(95)])
        let poller = Poller<Int>(
            policy: testPolicy(), scheduler: scheduler, isDone: { $0 == 95 }, changes: .equality,
            progress: { $0 == 95 ? 5 : Double($0) }, query: server.query)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .seconds(60))
        #expect(recorder.updates == [90])
        #expect(recorder.outcomes.first?.completedValue == 95)
    }
}
