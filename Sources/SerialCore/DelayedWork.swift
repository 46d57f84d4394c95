/// The handle of work scheduled for later (`SerialQueue.asyncAfter`, `Scheduling.schedule`).
///
/// The handle owns the work's closure until the work starts or is cancelled: whichever wins the
/// one atomic transition out of `pending` takes the closure. So `cancel()` releases the closure
/// (and what it captures) at once, on the calling thread, instead of when the scheduler next
/// meets the entry; a far-future timer that is cancelled keeps nothing alive.
public final class DelayedWork: @unchecked Sendable {  // `work` is touched only by the winner of `state`'s transition
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
    private let state = SeamAtomic<UInt8>(Status.pending.rawValue)
    /// Written once at init, then taken by whoever moves `state` out of `pending`.
    private var work: (@Sendable () -> Void)?

    package init(deadline: MonotonicInstant, work: @escaping @Sendable () -> Void) {
        self.deadline = deadline
        self.work = work
    }

    /// Prevents the run if it has not started.
    ///
    /// The work's closure is released before this returns, on the calling thread.
    ///
    /// - Returns: `true` when this call prevented the run; `false` when the work had already
    ///   started, or was cancelled before.
    /// - Complexity: O(1), lock-free.
    @discardableResult
    public func cancel() -> Bool {
        guard self.leavePending(for: .cancelled) else { return false }
        self.work = nil
        return true
    }

    /// Where the work stands now.
    public var status: Status { Status(rawValue: self.state.load(ordering: .acquiring))! }

    /// Whether the work was cancelled before it started.
    public var isCancelled: Bool { self.status == .cancelled }

    /// Claims the run and hands over the closure; `nil` means it was cancelled and must not run.
    /// Schedulers only.
    package func claimRun() -> (@Sendable () -> Void)? {
        guard self.leavePending(for: .started) else { return nil }
        defer { self.work = nil }
        return self.work
    }

    private func leavePending(for status: Status) -> Bool {
        self.state.compareExchange(
            expected: Status.pending.rawValue, desired: status.rawValue, ordering: .acquiringAndReleasing
        ).exchanged
    }
}
