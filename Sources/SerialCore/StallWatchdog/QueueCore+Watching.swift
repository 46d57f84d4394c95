extension QueueCore {
    /// One look for the stall watchdog, under the lock (which also closes the door, so a `sync`
    /// body that came through it is recorded as the owner and counted when it leaves). An idle
    /// queue is armed to wake `watchdog` when it gets work, if the watchdog may go to sleep.
    func stallSample(armingIfIdle watchdog: StallWatchdog.Core?) -> (sample: StallSample, isIdle: Bool) {
        self.lockState()
        defer { self.unlockState() }
        let isIdle = self.state.owner == .none && self.state.fifo.isEmpty
        if isIdle, let watchdog { self.state.armWatchdog(watchdog) }
        // A pooled queue whose `sync` body has returned goes back to the run queue owned by its
        // turn, which no thread runs yet: it waits for a thread, and runs nothing.
        let waitsForAPoolThread =
            self.state.owner == .worker && self.pool != nil && self.state.phase == .awaitingSyncReturn
        let running = self.state.owner != .none && !waitsForAPoolThread
        let syncOwnerThread = self.state.syncOwnerThread
        let runningThread: Int32? =
            switch self.state.owner {
            case .none: nil
            case .worker: running ? self.workerSystemID.load(ordering: .relaxed) : nil
            case .syncCaller: syncOwnerThread == 0 ? nil : syncOwnerThread
            }
        let progress = self.progress.count
        // Items the worker took in its batch behind the one running have not started either:
        // they have waited at least since the batch was taken, and are older than the FIFO's.
        let inBatch = self.state.counters.itemsWaitingInBatch(progress: progress, workerRunning: running && self.state.owner == .worker)
        // Most waits are not timed (`QueueCounters`): this look times them from now on.
        self.state.stampUntimedWaits(waitingInBatch: inBatch)
        let sample = StallSample(
            label: self.label, isRunning: running, progress: progress &+ self.state.counters.syncBodiesLeft,
            oldestWaitingSince: inBatch > 0 ? self.state.counters.batchTakenAt : self.state.counters.oldestEnteredAt,
            waitingItems: inBatch + self.state.fifo.count,
            runningThread: runningThread, workerThread: self.workerSystemID.load(ordering: .relaxed))
        return (sample, isIdle)
    }

    /// `watchdog` stopped watching: forget it, if armed; other watchdogs stay armed.
    func disarmWatchdog(_ watchdog: StallWatchdog.Core) {
        self.lockState()
        let watchdog = self.state.disarmWatchdog(watchdog)
        self.openFastPathIfIdle()
        self.unlockState()
        _ = watchdog  // released outside the lock
    }
}
