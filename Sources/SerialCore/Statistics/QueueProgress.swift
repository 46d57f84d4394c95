import Synchronization

/// How many FIFO items a queue has run: written by whoever runs the queue's batch (one owner
/// at a time, handed over under the queue's mutex), read without the lock by `statistics` and
/// the stall watchdog. A separate object, so the worker's per-item store does not share a
/// cache line with the fields producers touch.
final class QueueProgress: Sendable {
    /// A plain `Atomic`, not a `SeamAtomic`: a statistic that no thread waits on or takes work,
    /// a turn or a wake-up by; it only changes the figures reported. A scheduling point at each
    /// item's store would lengthen every simulated run by one step per item, for nothing.
    private let executed = Atomic<Int>(0)

    /// Items run so far.
    var count: Int { self.executed.load(ordering: .relaxed) }

    /// One more item ran. Only the queue's current owner calls it: a load and a store, no
    /// read-modify-write.
    @inline(__always)
    func itemRan() {
        self.executed.store(self.executed.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }
}
