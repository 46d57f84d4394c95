/// Something that runs work serially, now or at a deadline: a `SerialQueue` in production, a
/// `VirtualScheduler` (SerialTesting) in tests. Services (timers, countdowns, pollers, request
/// queues) are written against this protocol so their time-based logic runs on virtual time.
///
/// Guarantees every conformer keeps: work runs one piece at a time, in the order it was
/// submitted (`execute`) or fell due (`schedule`); scheduled work never runs before its deadline.
public protocol Scheduling: AnyObject, Sendable {
    /// The scheduler's current time.
    var now: MonotonicInstant { get }

    /// Runs `work` after everything submitted before it.
    func execute(_ work: @escaping @Sendable () -> Void)

    /// Runs `work` at or after `deadline`, unless the returned handle is cancelled first.
    @discardableResult
    func schedule(at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void) -> DelayedWork

    /// Whether the caller is running this scheduler's work.
    var isCurrent: Bool { get }
}

extension Scheduling {
    /// Runs `work` once `delay` has passed on the scheduler's clock.
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> DelayedWork {
        self.schedule(at: self.now.advanced(by: delay), work)
    }
}

extension SerialQueue: Scheduling {
    /// The current reading of `CLOCK_MONOTONIC`.
    public var now: MonotonicInstant { .now() }

    /// Same as `async`.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        self.async(work)
    }

    /// Same as `asyncAfter(deadline:)`.
    @discardableResult
    public func schedule(at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void) -> DelayedWork {
        self.asyncAfter(deadline: deadline, work)
    }
}
