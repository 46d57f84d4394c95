import SerialCore

/// How a task run by a `TimeoutManager` ended. Every task ends exactly one of these ways, and
/// every completion registered for it (the first caller's and any joined ones) gets it once.
///
/// The same shape as `PollOutcome` (both are `DeadlineOutcome`); for a task the cases mean:
/// - `completed(value)`: the operation returned `value` before the deadline.
/// - `failed(error)`: the operation threw (or its completion reported) `error` before the deadline.
/// - `timedOut`: the deadline passed first; a result arriving later is dropped and counted.
/// - `cancelled`: the manager was shut down while the task was in flight.
/// - `schedulerShutDown(reason)`: the manager's scheduler (or, for `run`, the worker the
///   operation was given to) stopped for good while the task was in flight; a result arriving
///   later is dropped and counted.
public typealias TimeoutOutcome<Value: Sendable> = DeadlineOutcome<Value>

/// Why a `TimeoutManager` refused to start a task. The task's completion will not be called.
public enum TimeoutManagerError: Error, Hashable, CustomStringConvertible {
    /// `limit` tasks were already in flight (`maximumInFlight`).
    case tooManyInFlight(limit: Int)
    /// The manager was shut down before this call.
    case shutDown
    /// The manager's scheduler stopped for good before this call; every task in flight then
    /// ended `.schedulerShutDown`.
    case schedulerShutDown(SchedulingError)
    /// `TimeoutManager.make` could not create a worker queue (its thread); nothing was created.
    case workerCreationFailed(SerialQueueError)

    /// Why the task was refused, for logs and messages.
    public var description: String {
        switch self {
        case .tooManyInFlight(let limit):
            return "TimeoutManager: \(limit) tasks already in flight (maximumInFlight); the task was not started"
        case .shutDown:
            return "TimeoutManager: shut down; the task was not started"
        case .schedulerShutDown(let error):
            return "TimeoutManager: its \(error); the task was not started"
        case .workerCreationFailed(let error):
            return "TimeoutManager: a worker queue could not be created (\(error)); no manager was made"
        }
    }
}

/// What a `TimeoutManager` did with a new task.
public enum TimeoutStart: Hashable, Sendable {
    /// A new task: its operation was started and its deadline armed.
    case started
    /// A task with the same key was in flight: this caller joined it. Its own operation and
    /// timeout are not used; its completion gets the running task's outcome.
    case joined
}

/// The way a completion-based operation reports its result to its `TimeoutManager`.
///
/// Call it once. Any call after the task has ended (timed out, shut down, or a second call)
/// is dropped and counted in `lateResultCount`.
public struct TimeoutCompletion<Value: Sendable>: Sendable {
    let manager: TimeoutManager<Value>
    let id: UInt64

    /// Reports `result`.
    ///
    /// - Returns: `true` when it ended the task; `false` when the task had already ended.
    @discardableResult
    public func callAsFunction(_ result: Result<Value, any Error>) -> Bool {
        switch result {
        case .success(let value): return self.manager.finish(self.id, with: .completed(value))
        case .failure(let error): return self.manager.finish(self.id, with: .failed(error))
        }
    }

    /// Reports success with `value`; see `callAsFunction(_:)`.
    @discardableResult
    public func succeed(_ value: Value) -> Bool {
        self.manager.finish(self.id, with: .completed(value))
    }

    /// Pushes the task's deadline to `timeout` from now, earlier or later: an idle timeout
    /// for an operation that reports progress (call it on each sign of life). Joined
    /// callers share the new deadline. Blocking `run` operations have no such handle: they
    /// cannot report progress before they return.
    ///
    /// - Returns: `true` when the task now ends at the new deadline at the latest; `false`
    ///   when it had already ended or its deadline had already fired (it times out).
    /// - Complexity: O(1), no allocation (`TimerHandle.reschedule`).
    @discardableResult
    public func extendDeadline(after timeout: Duration) -> Bool {
        self.manager.reschedule(self.id, after: timeout)
    }

    /// Reports failure with `error`; see `callAsFunction(_:)`.
    @discardableResult
    public func fail(_ error: any Error) -> Bool {
        self.manager.finish(self.id, with: .failed(error))
    }
}
