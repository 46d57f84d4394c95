extension SerialQueue: Scheduling {
    /// The current reading of `CLOCK_MONOTONIC`.
    public var now: MonotonicInstant { .now() }

    /// Like `async`, but throws instead of trapping when the queue is shut down. Not held back
    /// by `maximumQueued`: services bound their own work (`maximumPending` and the like).
    ///
    /// - Throws: `SchedulingError.shutDown` naming the queue; `work` is released without running.
    public func execute(_ work: @escaping @Sendable () -> Void) throws(SchedulingError) {
        guard self.core.trySubmit(.closure(work), bounded: false) == .accepted else {
            throw SchedulingError.shutDown(scheduler: self.label)
        }
    }

    /// Like `asyncAfter(deadline:)`, but throws instead of trapping when the queue is shut down.
    ///
    /// - Throws: `SchedulingError.shutDown` naming the queue; `work` is released without running.
    @discardableResult
    public func schedule(
        at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void
    ) throws(SchedulingError) -> DelayedWork {
        let handle = DelayedWork(deadline: deadline, work: work)
        guard self.core.trySchedule(handle) else {
            handle.cancel()
            throw SchedulingError.shutDown(scheduler: self.label)
        }
        return handle
    }

    /// Calls `handler` on the worker thread when the queue has stopped (shut down or released)
    /// and run or dropped everything it had accepted: the worker's last act before it exits, so
    /// `shutdown()` returns only after every handler has returned. Registered after that,
    /// `handler` runs at once on the caller's thread.
    public func whenShutDown(_ handler: @escaping @Sendable (SchedulingError) -> Void) -> ShutdownSubscription {
        let core = self.core
        let id = core.mutex.withLock { core.state.addShutdownHandler(handler) }
        guard let id else {
            handler(.shutDown(scheduler: self.label))
            return ShutdownSubscription {}
        }
        return ShutdownSubscription { [weak core] in
            guard let core else { return }
            let removed = core.mutex.withLock { core.state.removeShutdownHandler(id) }
            _ = removed  // released here, outside the lock
        }
    }
}
