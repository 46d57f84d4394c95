/// Something that runs work serially, now or at a deadline: a `SerialQueue` in production, a
/// `VirtualScheduler` (SerialTesting) in tests. Services (timers, countdowns, pollers, request
/// queues) are written against this protocol so their time-based logic runs on virtual time.
///
/// Guarantees every conformer keeps: work runs one piece at a time, in the order it was
/// submitted (`execute`) or fell due (`schedule`); scheduled work never runs before its deadline.
///
/// **Failure.** A scheduler can stop for good (a `SerialQueue` shut down or released). From
/// then on `execute` and `schedule` throw `SchedulingError.shutDown` and release the work
/// without running it, and every handler registered with `whenShutDown` runs once, after the
/// last work the scheduler accepted has run or been dropped. A service built on a scheduler
/// uses both to give each of its pending items one terminal outcome instead of losing it.
public protocol Scheduling: AnyObject, Sendable {
    /// The scheduler's current time.
    var now: MonotonicInstant { get }

    /// Runs `work` after everything submitted before it.
    ///
    /// - Throws: `SchedulingError.shutDown` when the scheduler no longer accepts work; `work`
    ///   is then released without running.
    func execute(_ work: @escaping @Sendable () -> Void) throws(SchedulingError)

    /// Runs `work` at or after `deadline`, unless the returned handle is cancelled first.
    /// Stopping the scheduler cancels it if it has not fallen due (its handle says so).
    ///
    /// - Throws: `SchedulingError.shutDown` when the scheduler no longer accepts work.
    @discardableResult
    func schedule(
        at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void
    ) throws(SchedulingError) -> DelayedWork

    /// Whether the caller is running this scheduler's work.
    var isCurrent: Bool { get }

    /// Calls `handler` once when the scheduler stops for good, after the last work it
    /// accepted has run or been dropped; on the scheduler's own thread when it has one (a
    /// `SerialQueue`'s worker, with `isCurrent` true), where `execute` already throws.
    /// Registered after that point, `handler` runs at once, on the caller's thread, before
    /// this returns.
    ///
    /// - Returns: A subscription whose `cancel()` withdraws the handler (a service withdraws
    ///   it when it stops, so a long-lived scheduler keeps no handler of a dead service).
    func whenShutDown(_ handler: @escaping @Sendable (SchedulingError) -> Void) -> ShutdownSubscription
}

extension Scheduling {
    /// Runs `work` once `delay` has passed on the scheduler's clock.
    ///
    /// - Throws: `SchedulingError.shutDown` when the scheduler no longer accepts work.
    @discardableResult
    public func schedule(
        after delay: Duration, _ work: @escaping @Sendable () -> Void
    ) throws(SchedulingError) -> DelayedWork {
        try self.schedule(at: self.now.advanced(by: delay), work)
    }
}
