import SerialCore
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// `DeadlineOutcome`: the one shape of "how bounded work ended", shared by `TimeoutManager`
/// (`TimeoutOutcome`) and `Poller` (`PollOutcome`), so one handler serves both.
@Suite("DeadlineOutcome")
struct DeadlineOutcomeTests {
    struct Failure: Error, CustomStringConvertible {
        var description: String { "boom" }
    }

    static let reason = SchedulingError.shutDown(scheduler: "virtual")

    @Test func pollAndTimeoutOutcomesAreOneType() {
        #expect(PollOutcome<Int>.self == DeadlineOutcome<Int>.self)
        #expect(TimeoutOutcome<Int>.self == DeadlineOutcome<Int>.self)
    }

    @Test(arguments: [
        (DeadlineOutcome<Int>.completed(7), "completed(7)", 7 as Int?, false),
        (.failed(Failure()), "failed(boom)", nil, false),
        (.timedOut, "timedOut", nil, true),
        (.cancelled, "cancelled", nil, false),
        (.schedulerShutDown(Self.reason), "schedulerShutDown(\(Self.reason))", nil, false),
    ])
    func eachCaseDescribesItselfAndAnswersValueAndIsTimedOut(
        outcome: DeadlineOutcome<Int>, description: String, value: Int?, isTimedOut: Bool
    ) {
        #expect(outcome.description == description)
        #expect(outcome.value == value)
        #expect(outcome.isTimedOut == isTimedOut)
    }

    /// The point of one shape: a task and a poll session cut short by the same scheduler
    /// shutdown end with the same case and reason, and one handler reads both.
    @Test func aTaskAndAPollSessionEndedByTheSameShutdownReportTheSameCase() throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let seen = LockedValue<[String]>([])
        @Sendable func handler(_ name: String) -> @Sendable (DeadlineOutcome<Int>) -> Void {
            { outcome in seen.withLock { $0.append("\(name): \(outcome)") } }
        }
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        try manager.start(timeout: .seconds(5), operation: { _ in }, completion: handler("task"))
        let poller = Poller<Int>(
            policy: PollPolicy(interval: .seconds(1)), scheduler: scheduler, isDone: { $0 >= 100 },
            changes: .equality, query: .completion { _, _ in })  // never answers
        poller.start(onOutcome: handler("poll"))
        scheduler.runUntilIdle()
        scheduler.shutdown()
        let expected = "schedulerShutDown(\(Self.reason))"
        #expect(seen.withLock { $0 }.sorted() == ["poll: \(expected)", "task: \(expected)"])
        guard case .schedulerShutDown(let reason)? = poller.outcome else {
            Issue.record("the poll session ended \(String(describing: poller.outcome)), not schedulerShutDown")
            return
        }
        #expect(reason == Self.reason)
    }
}
