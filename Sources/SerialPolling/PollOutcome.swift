import SerialCore

/// How a poll session ended. Each session ends with exactly one outcome.
public enum PollOutcome<Value: Sendable>: Sendable {
    /// A response passed the `isDone` test; its value.
    case completed(Value)
    /// `PollPolicy.Backoff.maximumConsecutiveErrors` errors in a row; the last one (a query's
    /// own error, or `PollError.attemptTimedOut`). Or the poller's scheduler stopped for good:
    /// `PollError.schedulerShutDown`.
    case failed(any Error)
    /// The policy's overall deadline passed, or the next query would have started at or after it.
    case timedOut
    /// `cancel()` was called, or the task iterating `updates` was cancelled or left the loop.
    case cancelled
}

extension PollOutcome: CustomStringConvertible {
    /// The case and its payload, e.g. `completed(100)`, `failed(timeout)`.
    public var description: String {
        switch self {
        case .completed(let value): return "completed(\(value))"
        case .failed(let error): return "failed(\(error))"
        case .timedOut: return "timedOut"
        case .cancelled: return "cancelled"
        }
    }
}

/// Errors the poller itself produces.
public enum PollError: Error, Hashable, CustomStringConvertible {
    /// Attempt `attempt` got no response within `PollPolicy.attemptTimeout` (`after`); it
    /// counts as an error for the backoff, and its late response is ignored.
    case attemptTimedOut(attempt: Int, after: Duration)
    /// Thrown by `updates` when the poll's deadline passed (outcome `timedOut`).
    case timedOut
    /// The poller's scheduler stopped for good (its `SerialQueue` was shut down or released):
    /// the session could not go on, or could not start. The outcome is `failed` with this error.
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
