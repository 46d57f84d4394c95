extension SerialQueue {
    /// Enqueues `work` to run on the worker once `delay` has passed on the monotonic clock.
    ///
    /// The work never runs early: the worker waits with `pthread_cond_timedwait` on
    /// `CLOCK_MONOTONIC`, and once due the work joins the back of the FIFO. Releasing or
    /// shutting down the queue cancels it if it is not yet due (the handle says so).
    ///
    /// - Returns: A handle whose `cancel()` prevents the run if it has not started, and releases
    ///   `work` at once.
    /// - Complexity: O(log n) in the number of pending delayed works; cancel is O(1).
    /// - Precondition: The queue was not shut down.
    @discardableResult
    public func asyncAfter(delay: Duration, _ work: @escaping @Sendable () -> Void) -> DelayedWork {
        self.asyncAfter(deadline: .now().advanced(by: delay), work)
    }

    /// Enqueues `work` to run on the worker at or after `deadline` on the monotonic clock.
    ///
    /// - Complexity: O(log n); cancel is O(1).
    /// - Precondition: The queue was not shut down.
    @discardableResult
    public func asyncAfter(deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void) -> DelayedWork {
        let handle = DelayedWork(deadline: deadline, work: WorkContext.bind(work))
        self.core.schedule(handle, operation: "asyncAfter")
        return handle
    }

    /// Enqueues `work` to run on the worker at or after `deadline` on Swift's `SuspendingClock`
    /// (the same clock as `MonotonicInstant`'s on Linux); see `asyncAfter(deadline:_:)`.
    ///
    /// - Precondition: The queue was not shut down.
    @discardableResult
    public func asyncAfter(deadline: SuspendingClock.Instant, _ work: @escaping @Sendable () -> Void) -> DelayedWork {
        self.asyncAfter(deadline: MonotonicInstant(deadline), work)
    }

    /// How many delayed works are waiting in the heap (cancelled ones may still be counted
    /// until the queue purges them).
    public var delayedWorkCount: Int {
        self.core.mutex.withLock { self.core.state.delayed.count }
    }
}
