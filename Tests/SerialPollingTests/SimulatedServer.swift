import SerialCore
import SerialPolling
import SerialTesting
import SerialTestSupport

/// A server error; `retryAfter` plays the part of an HTTP `Retry-After`.
struct ServerError: Error, Equatable, PollRetryHint {
    var code: Int
    var retryAfter: Duration? = nil
}

/// A job-status server on virtual time, for the completion form of `Poller`.
///
/// A script says, per attempt number, how long the answer takes, what it is, and how many
/// extra (duplicate) calls of the reply follow it. Every answer is scheduled on the
/// `VirtualScheduler`, so its time is exact; the server records when each query started,
/// when each reply was sent, and how many queries were in flight at once (a query is in
/// flight from its start until its first reply, as the server sees it).
final class SimulatedServer: Sendable {
    struct Answer: Sendable {
        var delay: Duration
        /// `nil`: never answers.
        var result: Result<Int, ServerError>?
        var duplicates: [Result<Int, ServerError>] = []

        static func value(_ value: Int, after delay: Duration = .zero) -> Answer {
            Answer(delay: delay, result: .success(value))
        }

        static func error(_ error: ServerError, after delay: Duration = .zero) -> Answer {
            Answer(delay: delay, result: .failure(error))
        }

        static let silence = Answer(delay: .zero, result: nil)
    }

    private struct Record {
        var starts: [MonotonicInstant] = []
        var attempts: [PollAttempt] = []
        var replies: [MonotonicInstant] = []
        var inFlight = 0
        var maxInFlight = 0
    }

    let scheduler: VirtualScheduler
    private let script: @Sendable (_ attempt: Int) -> Answer
    private let record = LockedValue(Record())

    init(scheduler: VirtualScheduler, script: @escaping @Sendable (_ attempt: Int) -> Answer) {
        self.scheduler = scheduler
        self.script = script
    }

    /// Answers in order from `answers` (by attempt number); past its end, the last one repeats.
    convenience init(scheduler: VirtualScheduler, answers: [Answer]) {
        self.init(scheduler: scheduler) { attempt in answers[min(attempt, answers.count) - 1] }
    }

    /// The query to hand to `Poller`.
    var query: PollQuery<Int> {
        .completion { attempt, reply in self.handle(attempt, reply) }
    }

    private func handle(_ attempt: PollAttempt, _ reply: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        let now = self.scheduler.now
        self.record.withLock { record in
            record.starts.append(now)
            record.attempts.append(attempt)
            record.inFlight += 1
            record.maxInFlight = max(record.maxInFlight, record.inFlight)
        }
        let answer = self.script(attempt.number)
        guard let result = answer.result else { return }
        // A shut-down scheduler loses the answer, as a dead network would.
        _ = try? self.scheduler.schedule(after: answer.delay) {
            let now = self.scheduler.now
            self.record.withLock { record in
                record.inFlight -= 1
                record.replies.append(now)
            }
            reply(result.mapError { $0 })
            for duplicate in answer.duplicates { reply(duplicate.mapError { $0 }) }
        }
    }

    /// Start times of the queries, relative to `origin`, in whole milliseconds.
    func startOffsets(from origin: MonotonicInstant) -> [Int64] {
        self.record.withLock { $0.starts.map { ($0 - origin).milliseconds } }
    }

    var starts: [MonotonicInstant] { self.record.withLock { $0.starts } }
    var attempts: [PollAttempt] { self.record.withLock { $0.attempts } }
    var replies: [MonotonicInstant] { self.record.withLock { $0.replies } }
    var maxInFlight: Int { self.record.withLock { $0.maxInFlight } }
    var queryCount: Int { self.record.withLock { $0.starts.count } }
}

/// Everything a poll session delivered, with the virtual time and thread of each delivery.
final class PollRecorder<Value: Sendable>: Sendable {
    enum Event {
        case update(Value)
        case outcome(PollOutcome<Value>)
    }

    private struct Log {
        var events: [Event] = []
        var times: [MonotonicInstant] = []
        var offScheduler = 0
    }

    private let log = LockedValue(Log())
    let scheduler: any Scheduling

    init(scheduler: any Scheduling) {
        self.scheduler = scheduler
    }

    func update(_ value: Value) {
        self.add(.update(value))
    }

    func outcome(_ outcome: PollOutcome<Value>) {
        self.add(.outcome(outcome))
    }

    private func add(_ event: Event) {
        let now = self.scheduler.now
        let onScheduler = self.scheduler.isCurrent
        self.log.withLock { log in
            log.events.append(event)
            log.times.append(now)
            if !onScheduler { log.offScheduler += 1 }
        }
    }

    /// Starts `poller` with this recorder's callbacks.
    @discardableResult
    func start(_ poller: Poller<Value>) -> UInt64 {
        poller.start(onUpdate: { self.update($0) }, onOutcome: { self.outcome($0) })
    }

    var updates: [Value] {
        self.log.withLock { log in
            log.events.compactMap { if case .update(let value) = $0 { return value } else { return nil } }
        }
    }

    var outcomes: [PollOutcome<Value>] {
        self.log.withLock { log in
            log.events.compactMap { if case .outcome(let outcome) = $0 { return outcome } else { return nil } }
        }
    }

    /// When the (first) outcome was delivered.
    var outcomeTime: MonotonicInstant? {
        self.log.withLock { log in
            log.events.indices.first { if case .outcome = log.events[$0] { true } else { false } }.map { log.times[$0] }
        }
    }

    /// Whether the outcome is the last event (nothing is delivered after it).
    var outcomeIsLast: Bool {
        self.log.withLock { log in
            guard let last = log.events.last, case .outcome = last else { return false }
            return true
        }
    }

    /// Deliveries that did not run on the scheduler.
    var offSchedulerDeliveries: Int { self.log.withLock { $0.offScheduler } }
}

extension PollOutcome {
    /// The case name, for comparisons in tests ("completed", "failed", "timedOut", "cancelled",
    /// "schedulerShutDown").
    var kind: String {
        switch self {
        case .completed: "completed"
        case .failed: "failed"
        case .timedOut: "timedOut"
        case .cancelled: "cancelled"
        case .schedulerShutDown: "schedulerShutDown"
        }
    }

    /// The scheduler's shutdown reason, when this outcome is `schedulerShutDown(reason)`.
    var schedulerShutDownReason: SchedulingError? {
        if case .schedulerShutDown(let reason) = self { return reason }
        return nil
    }

    var completedValue: Value? {
        if case .completed(let value) = self { return value }
        return nil
    }

    var failure: (any Error)? {
        if case .failed(let error) = self { return error }
        return nil
    }
}

extension Duration {
    /// Whole milliseconds (tests use millisecond-aligned times).
    var milliseconds: Int64 { self.saturatingNanoseconds / 1_000_000 }
}

/// A policy for tests: `interval` in ms, no timeouts, a backoff that fails after many errors.
func testPolicy(
    intervalMilliseconds: Int64 = 1000,
    attemptTimeout: Duration? = nil,
    deadline: Duration? = nil,
    backoff: PollPolicy.Backoff = .init(minimumDelay: .milliseconds(100), maximumDelay: .seconds(2), maximumConsecutiveErrors: 5)
) -> PollPolicy {
    PollPolicy(
        interval: .milliseconds(intervalMilliseconds), attemptTimeout: attemptTimeout, deadline: deadline,
        backoff: backoff)
}

/// A poller of percentages (done at 100) on `server`, seeded jitter.
func makePoller(
    _ server: SimulatedServer,
    policy: PollPolicy = testPolicy(),
    seed: UInt64 = 42,
    progress: Bool = false
) -> Poller<Int> {
    var measure: (@Sendable (Int) -> Double)? = nil
    if progress { measure = { (value: Int) -> Double in Double(value) } }
    return Poller<Int>(
        policy: policy, scheduler: server.scheduler, random: SeededRandom(seed: seed),
        isDone: { $0 >= 100 }, changes: .equality, progress: measure, query: server.query)
}
