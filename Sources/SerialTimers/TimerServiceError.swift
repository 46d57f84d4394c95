import SerialCore

/// Why a `TimerService` refused a timer. Expected outcomes, not bugs: handle them.
public enum TimerServiceError: Error, Hashable, CustomStringConvertible {
    /// Refused: `pendingCount` had reached `maximumPending` (the `limit`).
    case tooManyPending(limit: Int)
    /// The service was stopped before this call.
    case stopped
    /// The service's scheduler stopped for good (before or during this call); the service
    /// is stopped with it and its pending timers ended `.schedulerShutDown`.
    case schedulerShutDown(SchedulingError)

    /// Why the timer was refused, for logs and messages.
    public var description: String {
        switch self {
        case .tooManyPending(let limit):
            return "TimerService: \(limit) timers already pending (maximumPending); the timer was not scheduled"
        case .stopped:
            return "TimerService: stopped; the timer was not scheduled"
        case .schedulerShutDown(let error):
            return "TimerService: its \(error); the timer was not scheduled"
        }
    }
}
