/// A snapshot of a `SerialQueue`'s figures since it was created (`SerialQueue.statistics`).
///
/// **What is counted.** An *item* is anything that entered the queue's FIFO: `async` work,
/// executor jobs, delayed work that fell due, and `sync` calls that found the queue busy and
/// had to wait for their turn. A `sync` call that found the queue idle never queues, so it is
/// not an item (it is the fast path, and counting it would slow it down).
///
/// **Wait time** is measured per batch, and sampled: when the worker takes the FIFO, the time
/// since its oldest item entered is recorded. That is the longest wait of any item in the batch,
/// so the histogram is an upper bound on the waits of the items it times. A wait begins when an
/// item enters an empty FIFO; the queue's first wait, then one wait in eight, and every wait that
/// begins while a `StallWatchdog` sleeps armed on the queue, are timed (two clock reads each, about
/// 20 ns apiece: on a pooled actor hop, which costs a few hundred nanoseconds in all, timing
/// every wait was a fifth of the hop's time). Items a pooled turn leaves in the FIFO (it takes at
/// most 64) go on waiting from that turn's batch, timed if it was. So `waitTime.count` counts
/// timed batches, not all of them.
///
/// - Invariant: `submitted == executed + dropped + depth`.
public struct QueueStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Items that entered the FIFO.
    public var submitted: Int
    /// Items that have run (for a waiting `sync` call: that were handed the queue).
    public var executed: Int
    /// Items dropped without running (`shutdown(.cancelPending)`).
    public var dropped: Int
    /// Items accepted and not yet finished: waiting in the FIFO, or taken by the worker and not
    /// yet run, including the one running now.
    public var depth: Int { self.submitted - self.executed - self.dropped }
    /// The most items that waited in the FIFO at once (items the worker had already taken
    /// for its current batch are not in the FIFO).
    public var highWaterDepth: Int
    /// `sync` calls that found the queue busy and waited for their turn.
    public var syncWaits: Int
    /// Per timed batch (see above), how long its oldest item waited from entering the FIFO to the
    /// batch's start.
    public var waitTime: WaitTimeHistogram

    /// A snapshot with the given figures (for tests and exporters).
    public init(
        submitted: Int = 0, executed: Int = 0, dropped: Int = 0, highWaterDepth: Int = 0, syncWaits: Int = 0,
        waitTime: WaitTimeHistogram = WaitTimeHistogram()
    ) {
        self.submitted = submitted
        self.executed = executed
        self.dropped = dropped
        self.highWaterDepth = highWaterDepth
        self.syncWaits = syncWaits
        self.waitTime = waitTime
    }

    /// The figures in one line, for logs.
    public var description: String {
        "submitted \(self.submitted), executed \(self.executed), dropped \(self.dropped), depth \(self.depth) "
            + "(high water \(self.highWaterDepth)), sync waits \(self.syncWaits), "
            + "wait p99 ≤ \(self.waitTime.p99) over \(self.waitTime.count) timed batches"
    }
}
