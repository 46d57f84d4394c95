import SerialCore

/// The handle of one timer of a `TimerService`.
///
/// Holding it keeps the service alive, not the callback: the callback is released as soon
/// as the timer reaches a terminal `status`. Copies are the same handle.
public struct TimerHandle: Sendable {
    let service: TimerService
    let timer: TimerService.Timer

    /// The deadline that was asked for (the callback runs at the first tick at or after it).
    public var deadline: MonotonicInstant {
        self.service.core.state.withLock { _ in self.timer.deadline }
    }

    /// Prevents the callback if it has not been handed to the scheduler yet.
    ///
    /// - Returns: `true` when this call prevented the callback (the status is then
    ///   `.cancelled`); `false` when it had already run, was taken for a running turn (it will
    ///   run), was cancelled before, or the service or its scheduler stopped. Safe from any
    ///   thread, any number of times.
    /// - Complexity: O(1): the timer is unlinked from the wheel at once, under the service's lock.
    @discardableResult
    public func cancel() -> Bool {
        self.service.core.cancel(self.timer)
    }

    /// Whether the timer still waits in the wheel (neither due-and-taken, run, nor cancelled).
    public var isPending: Bool {
        self.service.core.state.withLock { $0.wheel.contains(self.timer.slot) }
    }

    /// Where the timer stands: `.pending` until its one terminal status (`.fired`,
    /// `.cancelled`, `.stopped` or `.schedulerShutDown`), which never changes afterwards.
    /// This is how a timer whose scheduler went away is observed: its callback does not run.
    public var status: TimerStatus {
        self.service.core.state.withLock { _ in self.timer.status }
    }
}
