/// How a piece of bounded work ended: a task run with a timeout (`TimeoutOutcome`), a poll
/// session (`PollOutcome`). Each piece of work ends exactly one of these ways.
///
/// The services name it after themselves and say what each case means for them; the shape is
/// one, so code that handles "how did it end" (logging, metrics, an async bridge) is written
/// once:
/// - `completed(value)`: the work produced its value in time.
/// - `failed(error)`: the work itself failed, with its error.
/// - `timedOut`: its deadline passed first.
/// - `cancelled`: its owner ended it (`cancel()`, a shutdown of the service).
/// - `schedulerShutDown(reason)`: the scheduler it ran on stopped for good, so it could not
///   go on; `reason` names that scheduler.
public enum DeadlineOutcome<Value: Sendable>: Sendable {
    /// The work produced `Value` before its deadline.
    case completed(Value)
    /// The work failed with this error before its deadline.
    case failed(any Error)
    /// The deadline passed first; a result arriving later is dropped.
    case timedOut
    /// The work was cancelled by its owner before it ended another way.
    case cancelled
    /// The scheduler the work depended on stopped for good (its `SerialQueue` shut down or
    /// released) before the work ended another way.
    case schedulerShutDown(SchedulingError)

    /// The value of `.completed`, otherwise `nil`.
    public var value: Value? {
        if case .completed(let value) = self { return value }
        return nil
    }

    /// Whether this is `.timedOut`.
    public var isTimedOut: Bool {
        if case .timedOut = self { return true }
        return false
    }
}

extension DeadlineOutcome: CustomStringConvertible {
    /// The case with its payload, for logs: `completed(100)`, `failed(…)`, `timedOut`,
    /// `cancelled`, `schedulerShutDown(…)`.
    public var description: String {
        switch self {
        case .completed(let value): return "completed(\(value))"
        case .failed(let error): return "failed(\(error))"
        case .timedOut: return "timedOut"
        case .cancelled: return "cancelled"
        case .schedulerShutDown(let error): return "schedulerShutDown(\(error))"
        }
    }
}
