extension SerialQueue {
    /// The queue's figures since it was created: items submitted, executed and dropped, the
    /// current and high-water depth, `sync` calls that waited, and how long items waited before
    /// their batch started (see `QueueStatistics` for what each one counts).
    ///
    /// Always on: the queue counts as it goes, at a few additions per item, and times a sample
    /// of its waits (two clock reads each; see `QueueStatistics`). Reading takes the queue's lock
    /// once.
    ///
    /// - Complexity: O(1).
    public var statistics: QueueStatistics {
        let core = self.core
        return core.mutex.withLock { core.state.counters.snapshot(executed: core.progress.count) }
    }
}
