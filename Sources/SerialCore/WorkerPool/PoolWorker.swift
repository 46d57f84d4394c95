/// One thread of a `WorkerPool`: its own wake-up (so waking one idle thread never wakes
/// another), its batch ring, and its `next` slot for same-thread hops.
final class PoolWorker {
    let pool: PoolCore
    /// Signalled by the thread that takes this worker off the idle list.
    let wakeUp = PthreadCondition()
    /// Guarded by the pool's mutex: set by whoever takes this worker off the idle list.
    @exclusivity(unchecked) var isWoken = false
    /// A queue this thread's own work made runnable: it runs on this thread as soon as the
    /// current turn ends, without a wake-up (Go's `runnext`). This thread only.
    @exclusivity(unchecked) var next: QueueCore?
    /// Whether this thread is inside `PoolCore.runTurns` (only then may `next` be filled).
    @exclusivity(unchecked) var isInTurn = false
    /// The ring a turn's batch moves into; reused, so a turn allocates nothing. This thread only.
    @exclusivity(unchecked) var batch = RingBuffer<QueueWork>(initialCapacity: PoolCore.batchLimit)

    init(pool: PoolCore) {
        self.pool = pool
    }

    /// Called before this thread blocks (with any queue's mutex held or not): the queue in
    /// `next` goes to the run queue, where another thread can take it, and the pool starts a
    /// stand-in if it would otherwise have fewer than its width of free threads.
    func beginBlocking() {
        if let next = self.next {
            self.next = nil
            self.pool.enqueue(next, callerWillDequeue: false)
        }
        self.pool.beginBlocking()
    }

    /// The blocking wait is over.
    func endBlocking() {
        self.pool.endBlocking()
    }
}
