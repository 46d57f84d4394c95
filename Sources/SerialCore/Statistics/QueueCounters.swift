/// The figures a queue keeps under its mutex for `SerialQueue.statistics` and `StallWatchdog`:
/// a few additions per item, and clock reads for one wait in `timingPeriod` (see
/// `QueueStatistics`).
///
/// **Which waits are timed.** A wait begins when an item enters an empty FIFO (or items are left
/// in it by a batch). Reading the clock costs about 20 ns here, twice a wait (its start and the
/// batch's), a fifth of what a pooled actor hop costs otherwise; so the first wait of a queue and
/// then one in `timingPeriod` are timed (Go's scheduler samples its run-queue latency one
/// goroutine in eight for the same reason). A wait that begins while a watchdog is armed on the
/// queue (it sleeps, waiting for this queue's work) is always timed. Any other untimed wait is
/// stamped by the first watchdog look that sees it (`stampUntimedWaits`): a lower bound, so a
/// watchdog never reports a wait too early, only up to one interval late; such a stamp is never
/// recorded in `waitTime`.
struct QueueCounters {
    private(set) var submitted = 0
    private(set) var dropped = 0
    private(set) var highWaterDepth = 0
    private(set) var syncWaits = 0
    /// `sync` bodies that left through the lock (progress the worker's counter does not see).
    private(set) var syncBodiesLeft = 0
    private(set) var waitTime = WaitTimeHistogram()
    /// When the FIFO's oldest item entered it (monotonic nanoseconds); 0 while it is empty, and
    /// while its wait is untimed and no watchdog has looked.
    private(set) var oldestEnteredAt: UInt64 = 0
    /// Whether `oldestEnteredAt` is a clock read of the wait's start (recorded in `waitTime` when
    /// the wait ends), not a watchdog's stamp.
    private var oldestEntryIsTimed = false
    /// When the owner took its current batch, whose items behind the first wait out of the FIFO
    /// until they start (0: untimed and not yet stamped), and the progress count once every item
    /// of it has started.
    private(set) var batchTakenAt: UInt64 = 0
    private var batchTakenIsTimed = false
    private(set) var batchEndsAtProgress = 0
    /// Waits begun, for the sampling (wraps).
    private var waitsBegun: UInt8 = 0

    /// One wait in this many is timed (the first of each run of them).
    static let timingPeriod: UInt8 = 8

    /// An item entered a FIFO that now holds `depth` items. `watched`: a watchdog is armed on the
    /// queue, so a wait that begins now is timed.
    @inline(__always)
    mutating func entered(depth: Int, watched: Bool) {
        self.submitted &+= 1
        if depth == 1 { self.beginWait(watched: watched) }
        if depth > self.highWaterDepth { self.highWaterDepth = depth }
    }

    /// A wait begins: timed, or left for a watchdog's look.
    @inline(__always)
    private mutating func beginWait(watched: Bool) {
        let sampled = self.waitsBegun % Self.timingPeriod == 0
        self.waitsBegun &+= 1
        if sampled || watched {
            self.oldestEnteredAt = ClockReads.monotonicNanoseconds()
            self.oldestEntryIsTimed = true
        } else {
            self.oldestEnteredAt = 0
            self.oldestEntryIsTimed = false
        }
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
    /// count was `progress`, leaving `remaining` items: its oldest item's wait is over (recorded
    /// if it was timed). The batch's other items, and items left behind (a pooled turn takes at
    /// most a few dozen), wait from now on: a lower bound for them, so the watchdog never reports
    /// a wait too early. An untimed wait's batch reads no clock: the items left begin a wait of
    /// their own (sampled as any other).
    @inline(__always)
    mutating func batchTaken(_ taken: Int, remaining: Int, progress: Int) {
        self.batchEndsAtProgress = progress &+ taken
        guard self.oldestEnteredAt != 0 else {
            self.batchTakenAt = 0
            self.batchTakenIsTimed = false
            if remaining > 0 { self.beginWait(watched: false) }
            return
        }
        let now = ClockReads.monotonicNanoseconds()
        if self.oldestEntryIsTimed {
            self.waitTime.record(nanoseconds: now > self.oldestEnteredAt ? now - self.oldestEnteredAt : 0)
        }
        self.oldestEnteredAt = remaining > 0 ? now : 0
        self.oldestEntryIsTimed = remaining > 0
        self.batchTakenAt = now
        self.batchTakenIsTimed = true
    }

    /// A watchdog looks (under the queue's lock) at a queue whose current wait, or whose batch,
    /// is untimed: it is stamped `now`, a lower bound of its start, for the watchdog only.
    /// `fifoIsEmpty`, `waitingInBatch`: what the look sees.
    mutating func stampUntimedWaits(fifoIsEmpty: Bool, waitingInBatch: Int, now: () -> UInt64) {
        if !fifoIsEmpty && self.oldestEnteredAt == 0 { self.oldestEnteredAt = now() }
        if waitingInBatch > 0 && self.batchTakenAt == 0 { self.batchTakenAt = now() }
    }

    /// Items of the current batch that have not started, at progress count `progress`, while
    /// the worker runs one of them (`workerRunning`: that one is not counted yet).
    func itemsWaitingInBatch(progress: Int, workerRunning: Bool) -> Int {
        max(0, self.batchEndsAtProgress &- progress &- (workerRunning ? 1 : 0))
    }

    /// `count` items put back at the front of the FIFO (a batch interrupted midway, a pooled turn
    /// that handed the queue to a `sync` caller), which now holds `depth`: they have waited since
    /// their batch was taken, and are older than anything that entered the FIFO since, so one wait
    /// goes on, not a new one. When none came back (the `sync` turn was the batch's last item),
    /// the FIFO's own wait goes on: its items entered after the batch was taken, so the batch's
    /// time would make their wait look longer than it is (a watchdog would report it too early,
    /// or not at all when it had reported the batch's waiting items from that same start).
    mutating func returned(_ count: Int, depth: Int) {
        self.batchEndsAtProgress = 0  // the batch's rest is in the FIFO again
        guard count > 0, depth > 0 else { return }
        // An untimed batch's rest stays untimed (0 until a watchdog's look stamps it): timing it
        // from now would record a wait shorter than the one it continues.
        self.oldestEnteredAt = self.batchTakenAt
        self.oldestEntryIsTimed = self.batchTakenIsTimed
    }

    /// Items left the FIFO without running; `remaining` are left in it. When the oldest was
    /// dropped and some are left, the ones left wait from now on (a lower bound, so the watchdog
    /// never times a wait from an item that is gone); when the oldest is still there
    /// (`oldestKept`), its wait goes on (one wait, one report).
    mutating func dropped(_ count: Int, remaining: Int, oldestKept: Bool) {
        self.dropped &+= count
        if remaining == 0 {
            self.oldestEnteredAt = 0
        } else if count > 0 && !oldestKept {
            self.oldestEnteredAt = ClockReads.monotonicNanoseconds()
            self.oldestEntryIsTimed = true
        }
    }

    /// The public snapshot, with `executed` read from the worker's progress counter.
    func snapshot(executed: Int) -> QueueStatistics {
        QueueStatistics(
            submitted: self.submitted, executed: executed, dropped: self.dropped, highWaterDepth: self.highWaterDepth,
            syncWaits: self.syncWaits, waitTime: self.waitTime)
    }
}
