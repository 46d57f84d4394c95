extension SerialQueue {
    /// Stops the queue from starting more work until a matching `resume()`.
    ///
    /// Work already running finishes; called from the queue's own work, nothing after the
    /// current piece starts (a call that piece makes into an actor on this queue runs inline, as
    /// part of it: see <doc:ActorHops>). Work keeps being accepted and keeps its order; `sync` callers
    /// wait. Calls nest: each needs its own `resume()`. Shutdown ends a suspension.
    ///
    /// - Complexity: O(1).
    public func suspend() {
        self.core.lockState()
        self.core.state.suspend()
        self.core.interrupted.store(true, ordering: .relaxed)
        self.core.unlockState()
    }

    /// Undoes one `suspend()`; the queue runs again when every suspend has been resumed.
    ///
    /// - Precondition: More `suspend()` than `resume()` calls so far; otherwise it traps.
    public func resume() {
        self.core.lockState()
        guard self.core.state.suspendCount > 0 else {
            self.core.unlockState()
            Misuse.overResume(label: self.label)
        }
        let action = self.core.state.resume()
        self.core.openFastPathIfIdle()
        self.core.unlockState()
        self.core.perform(action)
    }

    /// Whether more `suspend()` than `resume()` calls were made (and the queue is not shut down).
    public var isSuspended: Bool {
        self.core.mutex.withLock { self.core.state.isSuspended }
    }
}
