/// The figures a queue keeps under its mutex for `SerialQueue.statistics` and `StallWatchdog`:
/// a few additions per item and one clock read per batch (see `QueueStatistics`).
struct QueueCounters {
    private(set) var submitted = 0
    private(set) var dropped = 0
    private(set) var highWaterDepth = 0
    private(set) var syncWaits = 0
    /// `sync` bodies that left through the lock (progress the worker's counter does not see).
    private(set) var syncBodiesLeft = 0
    private(set) var waitTime = WaitTimeHistogram()
    /// When the FIFO's oldest item entered it (monotonic nanoseconds); 0 while it is empty.
    private(set) var oldestEnteredAt: UInt64 = 0
    /// When the owner took its current batch, whose items behind the first wait out of the FIFO
    /// until they start, and the progress count once every item of it has started.
    private(set) var batchTakenAt: UInt64 = 0
    private(set) var batchEndsAtProgress = 0

    /// An item entered a FIFO that now holds `depth` items.
    @inline(__always)
    mutating func entered(depth: Int) {
        self.submitted &+= 1
        if depth == 1 { self.oldestEnteredAt = ClockReads.monotonicNanoseconds() }
        if depth > self.highWaterDepth { self.highWaterDepth = depth }
    }

    /// A `sync` caller found the queue busy and queued its turn.
    mutating func syncWaited() {
        self.syncWaits &+= 1
    }

    /// A `sync` body gave the queue back through the lock.
    mutating func syncBodyLeft() {
        self.syncBodiesLeft &+= 1
    }

    /// A batch of `taken` items was taken from the front of the FIFO when the queue's progress
    /// count was `progress`, leaving `remaining` items: its oldest item's wait is over. The
    /// batch's other items, and items left behind (a pooled turn takes at most a few dozen),
    /// wait from now on: a lower bound for them, so the watchdog never reports a wait too early.
    @inline(__always)
    mutating func batchTaken(_ taken: Int, remaining: Int, progress: Int) {
        guard self.oldestEnteredAt != 0 else { return }
        let now = ClockReads.monotonicNanoseconds()
        self.waitTime.record(nanoseconds: now > self.oldestEnteredAt ? now - self.oldestEnteredAt : 0)
        self.oldestEnteredAt = remaining > 0 ? now : 0
        self.batchTakenAt = now
        self.batchEndsAtProgress = progress &+ taken
    }

    /// Items of the current batch that have not started, at progress count `progress`, while
    /// the worker runs one of them (`workerRunning`: that one is not counted yet).
    func itemsWaitingInBatch(progress: Int, workerRunning: Bool) -> Int {
        max(0, self.batchEndsAtProgress &- progress &- (workerRunning ? 1 : 0))
    }

    /// Items put back at the front of the FIFO (a batch interrupted midway, a pooled turn that
    /// handed the queue to a `sync` caller): they have waited since their batch was taken, and
    /// are older than anything that entered the FIFO since, so one wait goes on, not a new one.
    mutating func returned(depth: Int) {
        self.batchEndsAtProgress = 0  // the batch's rest is in the FIFO again
        guard depth > 0 else { return }
        self.oldestEnteredAt = self.batchTakenAt != 0 ? self.batchTakenAt : ClockReads.monotonicNanoseconds()
    }

    /// Items left the FIFO without running; `remaining` are left in it. When some are left, the
    /// oldest dropped one may have been the oldest waiting: the ones left wait from now on (a
    /// lower bound, so the watchdog never times a wait from an item that is gone).
    mutating func dropped(_ count: Int, remaining: Int) {
        self.dropped &+= count
        if remaining == 0 {
            self.oldestEnteredAt = 0
        } else if count > 0 {
            self.oldestEnteredAt = ClockReads.monotonicNanoseconds()
        }
    }

    /// The public snapshot, with `executed` read from the worker's progress counter.
    func snapshot(executed: Int) -> QueueStatistics {
        QueueStatistics(
            submitted: self.submitted, executed: executed, dropped: self.dropped, highWaterDepth: self.highWaterDepth,
            syncWaits: self.syncWaits, waitTime: self.waitTime)
    }
}
