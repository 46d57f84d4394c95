import SerialCore

extension TimerService {
    /// Runs `callback` at or after `deadline` on Swift's `SuspendingClock` (the same clock as
    /// `MonotonicInstant`'s on Linux, converted exactly); see `schedule(at:tolerance:_:)`.
    ///
    /// - Throws: as `schedule(after:tolerance:_:)`.
    @discardableResult
    public func schedule(
        at deadline: SuspendingClock.Instant, tolerance: Duration? = nil, _ callback: @escaping @Sendable () -> Void
    ) throws(TimerServiceError) -> TimerHandle {
        try self.schedule(at: MonotonicInstant(deadline), tolerance: tolerance, callback)
    }
}
