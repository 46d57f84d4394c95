/// One thread of a `WorkerPool`: its own wake-up (so waking one idle thread never wakes
/// another) and its batch ring.
///
/// A pool thread keeps no private queue of its own (no `next` slot, as Go's `runnext` or this
/// pool's first version had): a queue that work on a pool thread makes runnable goes to the run
/// queue like any other, where every free thread can see it, and an idle thread is woken unless
/// a spinning one will look. That keeps the pool work-conserving (a runnable queue never waits
/// while a pool thread is idle or could be woken) without any stealing protocol: a slot that
/// other threads may take would need the pool's lock for every hop anyway, which is all a hop
/// through the run queue costs.
final class PoolWorker {
    let pool: PoolCore
    /// Signalled by the thread that takes this worker off the idle list.
    let wakeUp = PthreadCondition()
    /// Guarded by the pool's mutex: set by whoever takes this worker off the idle list.
    @exclusivity(unchecked) var isWoken = false
    /// The ring a turn's batch moves into; reused, so a turn allocates nothing. This thread only.
    @exclusivity(unchecked) var batch = RingBuffer<QueueWork>(initialCapacity: PoolCore.batchLimit)

    init(pool: PoolCore) {
        self.pool = pool
    }
}

extension CurrentQueueStack {
    /// The one door through which this library blocks a thread: runs `wait` (which blocks until
    /// something another thread does) and, on a `WorkerPool` thread, tells the pool around it, so
    /// the pool starts a stand-in while fewer than its width of threads are free. No wait of the
    /// library may block a pool thread any other way: a path that forgot the stand-in could wait
    /// for work that only the blocked thread's pool could run.
    ///
    /// Called with or without a queue's mutex held (the pool's mutex nests inside a queue's).
    func blocking<T>(_ wait: () throws -> T) rethrows -> T {
        guard let worker = self.poolWorker else { return try wait() }
        worker.pool.beginBlocking()
        defer { worker.pool.endBlocking() }
        return try wait()
    }
}
