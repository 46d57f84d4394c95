/// One thread of a `WorkerPool`: its own wake-up (so waking one idle thread never wakes
/// another), its batch ring, its `next` slot and its own run queue (`local`).
///
/// **Its own run queue.** A queue or task job this thread's work makes runnable while every
/// other pool thread is busy goes to `local` (when `next` is taken), without the pool's lock;
/// the thread takes from it after its turns, and a thread that runs out of work steals half of
/// it. The hand-over is the same Dekker's as for `next` (below), with `local`'s tail in place of
/// the slot: work is published while a thread is free, never left behind for it.
///
/// **The `next` slot, and why it is stealable.** A queue that this thread's own work makes
/// runnable while no other pool thread is free (idle or spinning) goes to `next` and runs on this
/// thread right after the current turn, without the pool's lock (Go's `runnext`): chains of hops
/// between queues stay on one thread while every thread is busy. The slot is never private: a
/// thread that runs out of work steals it before it spins or sleeps, and a queue put there while
/// a thread is free goes to the run queue at once (waking a thread). So a runnable queue never
/// waits while a pool thread is idle or could be woken (work conservation): a private slot
/// would keep it behind this thread's current item, however long that runs.
///
/// The hand-over is Dekker's: the filler stores `next`, then reads the pool's `freeCount`; a
/// thread becoming free adds itself to `freeCount`, then reads every `next`. Both sequentially
/// consistent, so at least one of them sees the other and the queue is never left behind.
final class PoolWorker: @unchecked Sendable {  // `next` is atomic; the rest is this thread's or the pool mutex's
    let pool: PoolCore
    /// Signalled by the thread that takes this worker off the idle list.
    let wakeUp = PthreadCondition()
    /// Guarded by the pool's mutex: set by whoever takes this worker off the idle list.
    @exclusivity(unchecked) var isWoken = false
    /// A retained `QueueCore` this thread's work made runnable, or nil. Filled by this thread
    /// only; emptied by this thread or by a thief.
    private let next = SeamAtomic<UnsafeMutableRawPointer?>(nil)
    /// Runnables this thread's work queued while every other thread was busy. Filled by this
    /// thread only; emptied by it and by thieves.
    let local = LocalRunQueue()
    /// Whether this thread's last work came from `local`: it then looks at the pool's run queue
    /// first if anything waits there, so neither starves the other. This thread only.
    @exclusivity(unchecked) var tookOwnWorkLast = false
    /// Set when this thread re-queued a queue counting on itself to take the run queue's head
    /// (`callerWillDequeue`): it looks there before its own run queue. This thread only.
    @exclusivity(unchecked) var mustLookAtRunQueue = false
    /// Whether this thread is inside `PoolCore.runTurns` (only then may `next` be filled).
    @exclusivity(unchecked) var isInTurn = false
    /// The ring a turn's batch moves into; reused, so a turn allocates nothing. This thread only.
    @exclusivity(unchecked) var batch = RingBuffer<QueueWork>(initialCapacity: PoolCore.batchLimit)
    #if SERIAL_SIMULATION
    /// Ghost for the work-conservation invariant: this thread will look at the run queue before
    /// it runs any work (not yet started, woken, or it re-queued a queue for itself to take).
    /// Written under the pool's mutex.
    @exclusivity(unchecked) var willLook = true
    /// Ghost: between filling `next` and deciding whether to publish it (`makeRunnable`).
    @exclusivity(unchecked) var isPublishing = false

    /// Whether `next` holds a queue, read without a scheduling point (invariant checks only).
    var hasNextForInvariantCheck: Bool { self.next.valueForInvariantCheck() != nil }
    /// Ghost: between filling `local` and deciding whether to tell a free thread (`pushLocal`).
    @exclusivity(unchecked) var isPublishingLocal = false
    #endif

    init(pool: PoolCore) {
        self.pool = pool
    }

    /// Whether `next` is empty (this thread only: nobody else fills it).
    var hasNext: Bool { self.next.load(ordering: .relaxed) != nil }

    /// Puts `core` in the empty `next` slot (this thread only).
    func fillNext(_ core: QueueCore) {
        self.next.store(Self.retainedPointer(to: core), ordering: .sequentiallyConsistent)
    }

    /// `core`, retained, as the slot holds it. Out of line and unoptimized on purpose: inlined,
    /// the optimizer sinks the retain below the atomic store (ARC does not see the store publish
    /// the object), and a thief that takes the slot in between releases a reference that was
    /// never taken: the queue is freed while in use (seen in `compare`: a use after free in the
    /// ping-pong row, about one run in ten).
    @inline(never)
    @_optimize(none)
    static func retainedPointer(to core: QueueCore) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(core).toOpaque()
    }

    /// Empties `next`: its queue, unless a thief took it first.
    func takeNext() -> QueueCore? {
        guard let raw = self.next.exchange(nil, ordering: .sequentiallyConsistent) else { return nil }
        return Unmanaged<QueueCore>.fromOpaque(raw).takeRetainedValue()
    }
}

extension CurrentQueueStack {
    /// The one door through which this library blocks a thread: runs `wait` (which blocks until
    /// something another thread does) and, on a `WorkerPool` thread, tells the pool around it:
    /// the queue in this thread's `next` slot and everything in its own run queue go to the
    /// pool's run queue, and the pool starts a stand-in while fewer than its width of threads are
    /// free. No wait of the library may block
    /// a pool thread any other way: a path that forgot either could wait for work that only the
    /// blocked thread would run.
    ///
    /// Called with or without a queue's mutex held (the pool's mutex nests inside a queue's).
    func blocking<T>(_ wait: () throws -> T) rethrows -> T {
        guard let worker = self.poolWorker else { return try wait() }
        if let next = worker.takeNext() { worker.pool.enqueue(next) }
        if !worker.local.isEmpty { worker.pool.moveLocalWorkToRunQueue(of: worker) }
        worker.pool.beginBlocking()
        defer { worker.pool.endBlocking() }
        return try wait()
    }
}
