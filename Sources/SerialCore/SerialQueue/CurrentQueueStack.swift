/// What the current thread holds: the queues whose work it is running (the worker's own queue,
/// and every queue whose `sync` body is on this thread's stack), innermost last.
///
/// This answers `isCurrent` and catches reentrant `sync`, including chains through other
/// queues (A.sync → B.sync → A.sync). It also carries the thread's own wake-up for waiting
/// its turn in a busy queue, so no waiter is ever woken by a broadcast meant for another.
final class CurrentQueueStack {
    private static let local = ThreadLocal { CurrentQueueStack() }

    /// The calling thread's stack (created on the thread's first use).
    @inline(__always)
    static var current: CurrentQueueStack { Self.local.value }

    /// Runs `body` with the calling thread's stack, without retaining it (hot paths).
    @inline(__always)
    static func withCurrent<T>(_ body: (CurrentQueueStack) throws -> T) rethrows -> T {
        try Self.local.unmanagedValue._withUnsafeGuaranteedRef(body)
    }

    /// Unretained: a queue is on the stack only while its core is kept alive by the code
    /// running it (the worker, or the `sync` caller).
    @exclusivity(unchecked) private var held: [Unmanaged<QueueCore>] = []  // this thread only

    /// Signalled by a worker that hands this thread its turn. Waited on under that queue's mutex.
    let turnGranted = PthreadCondition()
    /// Set (under the granting queue's mutex) when the worker hands this thread the queue; read
    /// without the lock by the waiter watching for its turn before it sleeps (`watchForTurn`).
    private let turnGrantedFlag = SeamAtomic<Bool>(false)

    /// Whether the worker has handed this thread its turn (see `grantTurn`).
    var isTurnGranted: Bool { self.turnGrantedFlag.load(ordering: .acquiring) }

    /// Under the queue's mutex: this thread is about to wait for a turn.
    func awaitTurn() {
        self.turnGrantedFlag.store(false, ordering: .relaxed)
    }

    /// Under the queue's mutex: the queue is this thread's now (the caller signals `turnGranted`).
    func grantTurn() {
        self.turnGrantedFlag.store(true, ordering: .releasing)
    }

    /// How long a `sync` caller watches for its turn before it sleeps: a turn that comes
    /// meanwhile costs no futex sleep and wake-up (tens of microseconds on a VM with halted
    /// CPUs, a context switch on either side otherwise).
    static let turnWatchNanoseconds: UInt64 = 20_000

    /// Watches, without any lock, for the turn to be granted, for at most `turnWatchNanoseconds`
    /// (a dedicated queue's `sync`). Measured with `compare` (`sync_contended`, quiet machine):
    /// dedicated about 25 µs per contended call without the watch, 39–1,514 ns with it across runs. Pooled
    /// queues watch only when a `sync` body on another thread will hand the turn over: a turn run
    /// by a pool thread often waits for the core the watcher holds (pooled, medians of three alternating quiet runs each: 508–1,322 ns
    /// watching with a `sched_yield` at each look, 155–528 not watching; spinning without
    /// yielding was worse than yielding in loaded runs).
    func watchForTurn() {
        let deadline = ClockReads.monotonicNanoseconds() &+ Self.turnWatchNanoseconds
        while !self.turnGrantedFlag.load(ordering: .relaxed) && ClockReads.monotonicNanoseconds() < deadline {}
    }

    /// Set on a `WorkerPool` thread for its whole life: blocking waits tell the pool (so it can
    /// keep its width), and queues made runnable by this thread's work may run next on it.
    var poolWorker: PoolWorker? {
        get { self.unretainedPoolWorker?.takeUnretainedValue() }
        set { self.unretainedPoolWorker = newValue.map { Unmanaged.passUnretained($0) } }
    }
    /// `poolWorker`, unretained: the thread's loop keeps its worker alive for as long as it is
    /// set, and a hop reads it (a retain and a release there cost a pooled actor hop about 2 %).
    @exclusivity(unchecked) private(set) var unretainedPoolWorker: Unmanaged<PoolWorker>?  // this thread only
    /// The kernel's id of the thread this stack belongs to, for messages and reports.
    let systemThreadID = CurrentThread.systemID

    private init() {
        self.held.reserveCapacity(8)
    }

    @inline(__always)
    func holds(_ core: QueueCore) -> Bool {
        for entry in self.held where entry.toOpaque() == Unmanaged.passUnretained(core).toOpaque() {
            return true
        }
        return false
    }

    @inline(__always)
    func push(_ core: QueueCore) {
        self.held.append(Unmanaged.passUnretained(core))
    }

    @inline(__always)
    func pop(_ core: QueueCore) {
        let top = self.held.removeLast()
        assert(top.toOpaque() == Unmanaged.passUnretained(core).toOpaque(), "internal inconsistency: unbalanced queue stack")
    }

    /// The label of a held queue that runs on `pool`, if any (for `WorkerPool.shutdown`).
    func heldQueueLabel(on pool: PoolCore) -> String? {
        self.held.first { $0.takeUnretainedValue().pool === pool }?.takeUnretainedValue().label
    }

    /// The labels of the held queues, outermost first (for trap messages).
    var labels: [String] {
        self.held.map { $0.takeUnretainedValue().label }
    }

    #if SERIAL_SIMULATION
    /// The labels of the held queues one of whose bodies runs, outermost first (for deadlock
    /// reports: a dedicated worker holds its queue while idle too).
    var labelsOfQueuesRunningABody: [String] {
        self.held.map { $0.takeUnretainedValue() }.filter { $0.simulationBodies > 0 }.map(\.label)
    }
    #endif

    /// Whether this thread holds the queue whose core is at `address` (for `QueueWaitGraph`,
    /// which compares addresses of cores that waiting threads keep alive).
    func holds(address: UnsafeMutableRawPointer) -> Bool {
        self.held.contains { $0.toOpaque() == address }
    }
}
