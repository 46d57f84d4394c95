/// One thread of a `WorkerPool`: its own wake-up (so waking one idle thread never wakes
/// another), its batch ring, its `next` slot and its own run queue (`local`).
///
/// **Its own run queue.** A queue or task job this thread's work makes runnable while every
/// other pool thread is busy goes to `local` (when `next` is taken), without the pool's lock;
/// the thread takes from it after its turns, and a thread that runs out of work steals half of
/// it. The hand-over is the same Dekker's as for `next` (below), with `local`'s tail in place of
/// the slot: work is published while a thread is free, never left behind for it.
///
/// **The `next` slot: local, stolen only after a patience.** A queue that this thread's own turn
/// makes runnable goes to `next` and runs on this thread right after the current turn, without
/// the pool's lock and without waking anyone (Go's `runnext`): a hop between two queues stays on
/// one thread, so a round trip between two actors costs two turns, not two wake-ups. The slot is
/// not private: a thread out of work that watches it (`PoolCore.spinBeforeSleeping`) takes it once
/// it has held the same fill for `PoolCore.nextPatienceNanoseconds` (the owner's turn ran that long
/// without taking it), and the owner gives it up to the run queue when it is about to block
/// (`CurrentQueueStack.blocking`). While it holds a queue and a thread is free, some thread watches
/// or dozes: a free thread does not sleep while a `next` slot is filled, a fill that finds no
/// watcher wakes an idle thread to watch (Go's `wakep`), and a watcher that saw only turnover
/// dozes (`PoolCore.dozeNanoseconds`), then watches again. So runnable work waits at most the
/// patience while a thread watches, the doze plus two patiences while one dozes (plus, either way,
/// the free thread's own scheduling): work conservation, as a bound.
///
/// The hand-overs are Dekker's, all sequentially consistent: the filler stores `next`, then reads
/// the pool's `freeCount` and `watchingCount`; a thread becoming free adds itself to `freeCount`,
/// then reads every `next`; a watcher that stops watching takes itself out of `watchingCount`,
/// then reads every `next`. At least one side of each pair sees the other.
///
/// **The fill's tag.** The slot holds the queue's address with a 16-bit count of this thread's
/// fills in its top bits (user-space addresses on Linux use 47 or 48 bits, checked at each fill),
/// so a watcher that saw a word and sees it again later knows, but for a wrap of 65,536 fills in
/// between, that the owner has not taken that fill meanwhile; its compare-and-swap takes exactly
/// that fill.
final class PoolWorker: @unchecked Sendable {  // `next` is atomic; the rest is this thread's or the pool mutex's
    let pool: PoolCore
    /// Signalled by the thread that takes this worker off the idle list.
    let wakeUp = PthreadCondition()
    /// Guarded by the pool's mutex: set by whoever takes this worker off the idle list.
    @exclusivity(unchecked) var isWoken = false
    /// A retained `QueueCore` this thread's work made runnable, tagged (above), or 0. Filled by
    /// this thread only; emptied by this thread or by a watcher after its patience.
    private let next = SeamAtomic<UInt>(0)
    /// This thread's fills of `next`, for the tag. This thread only.
    @exclusivity(unchecked) private var fills: UInt = 0
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
    var hasNextForInvariantCheck: Bool { self.next.valueForInvariantCheck() != 0 }
    /// Ghost: virtual time of the fill `next` holds (invariant checks only).
    @exclusivity(unchecked) var nextFilledAt: UInt64 = 0
    /// Ghost: between filling `local` and deciding whether to tell a free thread (`pushLocal`).
    @exclusivity(unchecked) var isPublishingLocal = false
    /// Ghost: while this thread watches (`spinBeforeSleeping`), how many of its clock reads saw
    /// the fill it watches still in its slot (the bound of the work-conservation invariant).
    @exclusivity(unchecked) var watchedReads = 0
    #endif

    init(pool: PoolCore) {
        self.pool = pool
    }

    /// Whether `next` holds a queue (this thread only: nobody else fills it).
    var hasNext: Bool { self.next.load(ordering: .relaxed) != 0 }

    /// Puts `core` in the empty `next` slot (this thread only), tagged with the fill's count.
    func fillNext(_ core: QueueCore) {
        self.fills &+= 1
        let address = UInt(bitPattern: Self.retainedPointer(to: core))
        if _slowPath(address & Self.tagMask != 0) {
            fatalError("internal inconsistency: a queue's address \(address) uses the top 16 bits (please report it)")
        }
        let word = address | (self.fills << Self.tagShift)
        #if SERIAL_SIMULATION
        self.nextFilledAt = SimulatedThread.current?.kernel.now ?? 0
        #endif
        self.next.store(word, ordering: .sequentiallyConsistent)
    }

    /// The bits of a `next` word that hold the fill's tag (the top 16).
    private static let tagShift: UInt = 48
    private static let tagMask: UInt = 0xFFFF << 48

    /// What `next` holds now (0: empty): for a watcher, which compares words over its patience.
    var nextWord: UInt { self.next.load(ordering: .sequentiallyConsistent) }

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

    /// Empties `next`: its queue, unless a watcher took it first.
    func takeNext() -> QueueCore? {
        Self.queue(in: self.next.exchange(0, ordering: .sequentiallyConsistent))
    }

    /// Takes the fill `word` from `next` if the slot still holds it (a watcher, after its patience).
    func stealNext(ifStill word: UInt) -> QueueCore? {
        guard self.next.compareExchange(expected: word, desired: 0, ordering: .sequentiallyConsistent).exchanged
        else { return nil }
        return Self.queue(in: word)
    }

    /// The queue a `next` word holds, owning its reference again (once per word taken).
    private static func queue(in word: UInt) -> QueueCore? {
        guard word != 0 else { return nil }
        let raw = UnsafeRawPointer(bitPattern: word & ~Self.tagMask)!
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
