import SerialCore

/// The handle of one timer of a `TimerService`.
///
/// Holding it keeps the service alive, not the callback: the callback is released as soon
/// as it has run or been cancelled.
public final class TimerHandle: Sendable {
    /// The deadline that was asked for (the callback runs at the first tick at or after it).
    public let deadline: MonotonicInstant
    let service: TimerService
    let slot: TimingWheel<TimerService.Callback>.Handle

    init(service: TimerService, slot: TimingWheel<TimerService.Callback>.Handle, deadline: MonotonicInstant) {
        self.service = service
        self.slot = slot
        self.deadline = deadline
    }

    /// Prevents the callback if it has not been handed to the scheduler yet.
    ///
    /// - Returns: `true` when this call prevented the callback; `false` when it had already
    ///   run, was taken for a running turn (it will run), was cancelled before, or the service
    ///   was stopped. Safe from any thread, any number of times.
    /// - Complexity: O(1): the timer is unlinked from the wheel at once, under the service's lock.
    @discardableResult
    public func cancel() -> Bool {
        self.service.core.cancel(self.slot)
    }

    /// Whether the timer still waits in the wheel (neither due-and-taken, run, nor cancelled).
    public var isPending: Bool {
        self.service.core.isPending(self.slot)
    }
}
