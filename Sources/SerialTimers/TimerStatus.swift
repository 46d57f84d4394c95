import SerialCore

/// Where a `TimerHandle`'s timer stands. Every timer leaves `.pending` exactly once, for one
/// of the other (terminal) cases.
public enum TimerStatus: Hashable, Sendable, CustomStringConvertible {
    /// Waiting for its deadline (or due and waiting for a scheduler turn).
    case pending
    /// Handed to a scheduler turn: its callback runs, or has run.
    case fired
    /// `TimerHandle.cancel()` prevented it.
    case cancelled
    /// `TimerService.stop()` (or the service's release) dropped it unrun.
    case stopped
    /// The service's scheduler stopped for good (`SchedulingError` says which) before the
    /// callback was handed to it: it was dropped unrun.
    case schedulerShutDown(SchedulingError)

    /// Whether this is `.pending`.
    public var isPending: Bool { self == .pending }

    /// The status in a few words, for logs.
    public var description: String {
        switch self {
        case .pending: return "pending"
        case .fired: return "fired"
        case .cancelled: return "cancelled"
        case .stopped: return "stopped"
        case .schedulerShutDown(let error): return "schedulerShutDown(\(error))"
        }
    }
}
