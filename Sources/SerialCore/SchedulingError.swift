/// Why a scheduler refused work. An expected outcome in a server's life, not a bug: services
/// turn it into a terminal outcome for each pending item and a typed error for later calls.
public enum SchedulingError: Error, Hashable, CustomStringConvertible {
    /// The scheduler named `scheduler` (a `SerialQueue`'s label) stopped for good: shut down
    /// or released. Work given to it now is released without running.
    case shutDown(scheduler: String)

    /// The name of the scheduler that refused.
    public var scheduler: String {
        switch self {
        case .shutDown(let scheduler): return scheduler
        }
    }

    /// One sentence saying what happened, for logs and error messages.
    public var description: String {
        switch self {
        case .shutDown(let scheduler):
            return "scheduler \"\(scheduler)\" is shut down; the work was not run"
        }
    }
}
