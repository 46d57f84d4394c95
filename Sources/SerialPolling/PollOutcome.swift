import SerialCore

/// How a poll session ended. Each session (each `Poller.start`) ends with exactly one outcome,
/// delivered once, after all of its updates.
///
/// The same shape as `TimeoutOutcome` (both are `DeadlineOutcome`); for a session the cases mean:
/// - `completed(value)`: a response passed the `isDone` test; its value.
/// - `failed(error)`: `PollPolicy.Backoff.maximumConsecutiveErrors` errors in a row; the last
///   one (a query's own error, or `PollError.attemptTimedOut`).
/// - `timedOut`: the policy's overall deadline passed, or the next query would have started at
///   or after it.
/// - `cancelled`: `cancel()` was called, or the task iterating `updates` was cancelled or left
///   the loop.
/// - `schedulerShutDown(reason)`: the poller's scheduler stopped for good (its `SerialQueue`
///   was shut down or released), so the session could not go on, or could not start.
public typealias PollOutcome<Value: Sendable> = DeadlineOutcome<Value>

/// Errors the poller itself produces.
public enum PollError: Error, Hashable, CustomStringConvertible {
    /// Attempt `attempt` got no response within `PollPolicy.attemptTimeout` (`after`); it
    /// counts as an error for the backoff, and its late response is ignored.
    case attemptTimedOut(attempt: Int, after: Duration)
    /// Thrown by `updates` when the poll's deadline passed (outcome `timedOut`).
    case timedOut
    /// Thrown by `updates` when the poller's scheduler stopped for good (outcome
    /// `schedulerShutDown(reason)`, with the same `reason`).
    ///
    /// Kept as an error only for `updates`, which must end by throwing something that says
    /// the poll was stopped; `PollOutcome` says it with its own case and never carries this.
    case schedulerShutDown(SchedulingError)

    /// A sentence saying what happened.
    public var description: String {
        switch self {
        case .attemptTimedOut(let attempt, let after):
            return "poll attempt \(attempt) got no response within \(after)"
        case .timedOut:
            return "poll deadline passed before the job was done"
        case .schedulerShutDown(let reason):
            return "poll stopped: \(reason)"
        }
    }
}

/// An error that carries the server's word on when to ask again (an HTTP `Retry-After`, a
/// throttling hint). The poller waits `retryAfter`, clamped to the backoff's
/// `[minimumDelay, maximumDelay]`, instead of a random backoff delay.
public protocol PollRetryHint: Error {
    /// The delay the server asked for, or `nil` for none (the usual backoff applies).
    var retryAfter: Duration? { get }
}

/// What a query is told about the attempt it serves.
public struct PollAttempt: Sendable, Hashable, CustomStringConvertible {
    /// 1 for the first query of a session, then 2, 3...
    public let number: Int
    /// The poll session (epoch) this attempt belongs to; each `start` begins a new one.
    public let session: UInt64
    /// When the query was started, on the poller's scheduler clock.
    public let startedAt: MonotonicInstant
    /// When this attempt times out (its timeout clamped to the overall deadline), or `nil`.
    public let deadline: MonotonicInstant?

    /// `attempt N of session S at T`.
    public var description: String {
        "attempt \(self.number) of session \(self.session) at \(self.startedAt)"
    }
}
