// The pooled mode of a queue: the same QueueCore and QueueState, but no thread of its own. When
// the queue has work and no owner it waits in its pool's run queue (`QueueState.wakePending`);
// a pool thread runs one bounded turn of it and puts it back at the tail if work remains.

extension QueueCore {
    /// One turn on a pool thread: at most `PoolCore.batchLimit` items, then the queue goes back
    /// to the run queue (work left), to sleep (idle, its earliest delayed deadline armed on the
    /// pool's timer), or away (shut down or released, and drained).
    ///
    /// While the turn runs, the thread's queue stack holds exactly this queue.
    func runPooledTurn(on worker: PoolWorker, stack: CurrentQueueStack) {
        assert(self.pool === worker.pool, "internal inconsistency: a turn on another pool's thread, or of a dedicated queue")
        stack.push(self)
        defer { stack.pop(self) }
        self.workerSystemID.store(stack.systemThreadID, ordering: .relaxed)  // for stall reports
        self.lockState()
        self.state.beginPooledTurn()
        self.moveDueDelayedWork()
        if self.state.takeBatch(into: &worker.batch, limit: PoolCore.batchLimit, progress: self.progress.count) {
            self.interrupted.store(false, ordering: .relaxed)
            let roomWaiters = self.roomWaitersToWake
            let watchdogs = self.state.takeArmedWatchdogs()  // delayed work fell due
            self.unlockState()
            roomWaiters?.broadcast()
            watchdogs.wake()
            if self.run(&worker.batch) { return }  // handed to a sync caller, whose leave re-schedules it
            self.lockState()
            self.state.finishBatch()
            self.moveDueDelayedWork()
        }
        if self.state.workerShouldExit {
            _ = self.runShutdownHandlers()  // on this thread, with this queue current, as its last act
            // Detached before the exit is visible: a release or shutdown that returns finds the
            // pool without this queue (the pool's locks are leaves: taking them here is safe).
            self.pool!.detach(self)
            self.state.workerExited()
            self.announceWorkerExit()
            self.unlockState()
            return
        }
        if self.state.hasRunnableWork {
            self.state.requeuePooledTurn()
            self.unlockState()
            worker.pool.requeue(self, from: worker)
            return
        }
        self.state.fallAsleep()
        _ = self.state.shrinkFIFOIfOversized(floor: PoolCore.batchLimit)
        self.openFastPathIfIdle()
        // Armed under the queue's lock, so it cannot land after this queue's last turn disarmed it.
        // Suspended too: due work then enters the FIFO at its deadline, an item a watchdog sees.
        if let deadline = self.state.nextDelayedDeadline { worker.pool.timers.arm(deadline, for: self) }
        self.unlockState()
    }

    /// The pool's timer says the earliest armed deadline has come: due delayed work joins the
    /// FIFO and the queue is scheduled if it is idle; an idle queue whose earliest entry was
    /// cancelled re-arms for the next one.
    func delayedWorkFellDue() {
        self.lockState()
        self.moveDueDelayedWork()
        let action = self.state.wakeWorkerIfNeeded()
        // No turn running or queued (a `sync` body may own the queue: its leave schedules a turn
        // only for work in the FIFO) and delayed work still pending: nobody else will arm the timer
        // (suspended too, as at the end of a turn).
        let rearm: MonotonicInstant? =
            action == .none && self.state.phase == .sleeping && !self.state.wakePending
            ? self.state.nextDelayedDeadline : nil
        if let rearm { self.pool?.timers.arm(rearm, for: self) }  // under the lock, as in a turn
        self.openFastPathIfIdle()
        self.unlockState()
        // Due work goes ahead of the queues waiting for a thread: it runs after the current turns.
        if action == .wakeWorker, let pool = self.pool { pool.enqueue(self, ahead: true) } else { self.perform(action) }
    }

    /// A pooled turn reached a `sync` caller's turn: the rest of the batch goes back to the front
    /// of the FIFO, the caller gets the queue, and the pool thread leaves instead of waiting for
    /// the body (the caller's `leaveSync` puts the queue back in the run queue).
    func handOffReleasingThePoolThread(to waiter: CurrentQueueStack, rest: inout RingBuffer<QueueWork>) {
        self.lockState()
        self.state.handOffToSyncCaller(thread: waiter.systemThreadID)
        self.state.returnUnrun(&rest)
        // A cancelling shutdown that came during this batch drops what it could not reach.
        let dropped = self.state.lifecycle == .shutDown(.cancelPending) ? self.state.removeCancellableWork() : []
        waiter.grantTurn()
        // Signalled under the lock, as in `handOff`: the waiter's condition lives only as long as its thread.
        waiter.turnGranted.signal()
        self.unlockState()
        self.discard(dropped)
    }
}
