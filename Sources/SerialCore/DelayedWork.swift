import Synchronization

/// The handle of work scheduled for later (`SerialQueue.asyncAfter`, `Scheduling.schedule`).
///
/// The handle does not hold the work's closure, so keeping a handle keeps nothing else alive.
/// Cancelling is lock-free: the scheduler drops cancelled entries when it meets them.
public final class DelayedWork: Sendable {
    /// Where the work stands.
    public enum Status: UInt8, Sendable {
        /// Not run yet, not cancelled.
        case pending
        /// Cancelled before it started, by `cancel()` or by its scheduler going away.
        case cancelled
        /// Its run has begun (and may have finished).
        case started
    }

    /// The instant at or after which the work runs.
    public let deadline: MonotonicInstant
    private let state = Atomic<UInt8>(Status.pending.rawValue)

    package init(deadline: MonotonicInstant) {
        self.deadline = deadline
    }

    /// Prevents the run if it has not started.
    ///
    /// - Returns: `true` when this call prevented the run; `false` when the work had already
    ///   started, or was cancelled before.
    /// - Complexity: O(1), lock-free.
    @discardableResult
    public func cancel() -> Bool {
        self.state.compareExchange(
            expected: Status.pending.rawValue, desired: Status.cancelled.rawValue, ordering: .acquiringAndReleasing
        ).exchanged
    }

    /// Where the work stands now.
    public var status: Status { Status(rawValue: self.state.load(ordering: .acquiring))! }

    /// Whether the work was cancelled before it started.
    public var isCancelled: Bool { self.status == .cancelled }

    /// Claims the run; `false` means it was cancelled and must not run. Schedulers only.
    package func claimRun() -> Bool {
        self.state.compareExchange(
            expected: Status.pending.rawValue, desired: Status.started.rawValue, ordering: .acquiringAndReleasing
        ).exchanged
    }
}
