/// What `shutdown` does with work that has not run yet.
public enum ShutdownMode: Sendable, Hashable {
    /// Run everything already enqueued; cancel delayed work that is not yet due.
    case drain
    /// Drop enqueued `async` work and due delayed work that has not started, and cancel delayed
    /// work. Executor jobs and waiting `sync` callers still run: dropping them would leave a
    /// task or a thread waiting forever.
    case cancelPending
}

/// What a `shutdown` call dropped.
public struct ShutdownReport: Sendable, Hashable {
    /// `async` work dropped without running (`.cancelPending` only).
    public var cancelledWork: Int
    /// Delayed work cancelled before it ran.
    public var cancelledDelayedWork: Int

    /// A report with the given counts (for tests and for schedulers that report like a queue).
    public init(cancelledWork: Int, cancelledDelayedWork: Int) {
        self.cancelledWork = cancelledWork
        self.cancelledDelayedWork = cancelledDelayedWork
    }
}

extension SerialQueue {
    /// Stops the queue: from now on `async`, `sync`, `asyncAfter` and executor jobs are
    /// rejected with a trap that names the queue (`tryAsync` throws instead). Then, per `mode`,
    /// already-enqueued work runs or is dropped, and the call waits for the worker thread to
    /// exit — unless it is made from this queue's own work, where waiting would deadlock: the
    /// worker then exits after the current work, and the release joins it.
    ///
    /// Ends any suspension. Calling it again only waits for the worker (same rule) and returns
    /// the totals.
    ///
    /// - Returns: What was dropped. Called from the queue's own work, it counts what was dropped
    ///   so far: the rest of the worker's current batch is dropped after the call returns.
    @discardableResult
    public func shutdown(_ mode: ShutdownMode = .drain) -> ShutdownReport {
        self.core.beginShutdown(mode)
        self.waitForWorkerExit()
        // Read after the worker exited: it may have dropped the rest of a batch it was running.
        return self.shutdownReport()
    }

    private func shutdownReport() -> ShutdownReport {
        self.core.mutex.withLock {
            ShutdownReport(
                cancelledWork: self.core.state.cancelledWork, cancelledDelayedWork: self.core.state.cancelledDelayedWork)
        }
    }

    /// Whether `shutdown` was called.
    public var isShutDown: Bool {
        self.core.mutex.withLock { !self.core.state.isAccepting }
    }

    /// Waits for the worker to leave its loop and joins it, unless the caller is running this
    /// queue's work (then the worker is joined at release).
    private func waitForWorkerExit() {
        guard !self.isCurrent else { return }
        let core = self.core
        core.mutex.lock()
        if core.state.phase != .exited {
            // On a pool thread, a stand-in runs the pool's queues (this one too) while this waits.
            CurrentQueueStack.current.blocking {
                while core.state.phase != .exited {
                    core.waitersCondition().wait(releasing: core.mutex)
                }
            }
        }
        let mustJoin = core.state.claimThread()
        core.unlockState()
        if mustJoin, let thread = self.thread { CurrentQueueStack.current.blocking { thread.join() } }
    }

    /// The last reference is gone: let the worker drain and exit, and reclaim its thread.
    func releaseWorker() {
        let core = self.core
        core.lockState()
        if core.state.isSuspended {
            let count = core.state.suspendCount
            core.unlockState()
            Misuse.releasedWhileSuspended(label: self.label, count: count)
        }
        let (action, cancelledDelayed) = core.state.release()
        let mustReclaim = core.state.claimThread()
        core.unlockState()
        core.perform(action)
        core.discard([], delayed: cancelledDelayed)
        guard mustReclaim else { return }
        guard let thread = self.thread else {
            // Pooled: as with a thread of its own, the release waits until the queue has drained
            // on the pool, unless it happens inside this queue's own turn.
            self.waitForWorkerExit()
            return
        }
        if thread.isCurrent {
            // Released by its own work: the worker cannot join itself; it exits once drained.
            thread.detach()
        } else {
            // The worker drains first, and its work may wait for queues of a pool this thread runs.
            CurrentQueueStack.current.blocking { thread.join() }
        }
    }
}

extension QueueCore {
    /// Stops accepting work and, per `mode`, drops what may be dropped; the worker (or the
    /// pool) drains the rest and exits. Does not wait. Nothing happens if already shut down.
    func beginShutdown(_ mode: ShutdownMode) {
        self.lockState()
        guard let action = self.state.shutDown(mode) else {
            self.unlockState()
            return
        }
        if mode == .cancelPending { self.interrupted.store(true, ordering: .relaxed) }
        let roomWaiters = action.wakeRoomWaiters ? self.roomWaitersToWake : nil
        self.unlockState()
        self.perform(action.wake)
        roomWaiters?.broadcast()  // they find it shut down
        self.discard(action.dropped, delayed: action.cancelledDelayed)
    }
}
