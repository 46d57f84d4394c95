/// The decisions of a `WorkerPool`, as a plain value: every method runs under the pool's mutex,
/// decides, and returns what the caller must do after unlocking (which thread to wake). Every
/// field is written only here, by a method named after the transition it makes.
///
/// - Invariant: a queue is in `runQueue` at most once (its `QueueState.wakePending` says so;
///   task jobs, which are not serial, may be there any number of times);
///   an idle worker is in `idleWorkers` exactly while it waits for `isWoken`; `threadCount -
///   blockedCount` threads are free to run turns, and the pool adds threads while fewer than
///   `width` are, so a pool thread blocked in a `sync` never starves the queue it waits for;
///   `dueAtHead <= runQueue.count`.
struct PoolState {
    /// How many threads the pool keeps free to run queues.
    let width: Int
    /// Queues, and jobs of tasks that prefer the pool, waiting for a pool thread, in the order
    /// they became runnable.
    private(set) var runQueue = RingBuffer<PoolRunnable>(initialCapacity: 64)
    /// Threads waiting for work, most recently idle last (woken first: its cache is warm).
    private(set) var idleWorkers: [PoolWorker] = []
    /// Live pool threads (started, or reserved to be started, and not yet retired).
    private(set) var threadCount = 0
    /// Pool threads inside a blocking wait (`sync` turn, room in a bounded queue, a shutdown).
    private(set) var blockedCount = 0
    /// Queues created on the pool that have not yet exited, by identity; unretained: a queue
    /// detaches itself on its last turn, while that turn still holds it.
    private(set) var attached: [ObjectIdentifier: Unmanaged<QueueCore>] = [:]
    /// Attach order of each attached queue: `close()` hands them back in that order, not in the
    /// dictionary's (which follows addresses), so a shutdown is the same from run to run (and a
    /// simulation's seed replays it).
    private var attachOrder: [ObjectIdentifier: UInt64] = [:]
    private var attachCount: UInt64 = 0
    /// No new queues (`shutdown` was called, or the pool's last reference is gone).
    private(set) var isClosed = false
    /// Threads leave once no queue is attached and nothing is runnable.
    private(set) var isStopping = false
    /// Set when a compensating thread could not be started.
    private(set) var failedThreadStarts = 0
    /// Every live pool thread, for stealing from their `next` slots.
    private(set) var workers: [PoolWorker] = []
    /// Threads watching the run queue for a few microseconds before sleeping: enqueuing for
    /// them needs no wake-up.
    private(set) var spinningCount = 0
    /// Idle threads that doze: a watch saw only the `next` slots' turnover (their owners took
    /// their fills in time), so they sleep for `PoolCore.dozeNanoseconds` (or until woken) and
    /// then watch again. They stand for watchers: a `next` fill wakes nobody for them.
    private(set) var dozingCount = 0
    /// Queues whose delayed work fell due, waiting at the head of the run queue (they are its
    /// first `dueAtHead` entries: put there with `ahead`, and taken first). A thread running a
    /// chain of `next` hops ends it while this is positive.
    private(set) var dueAtHead = 0

    init(width: Int) {
        self.width = width
    }

    /// Whether every thread should leave now.
    var threadsShouldLeave: Bool { self.isStopping && self.attached.isEmpty && self.runQueue.isEmpty }

    /// Reserves `count` threads about to be started.
    mutating func reserveThreads(_ count: Int) {
        self.threadCount += count
    }

    /// A pool thread started.
    mutating func addWorker(_ worker: PoolWorker) {
        self.workers.append(worker)
    }

    /// A pool thread leaves. Once threads should leave, they must all go, and so must the timer
    /// thread: a thread that went idle before the stop hears of it only from a queue detaching
    /// or from here. When the run queue held task jobs at the stop, no queue detaches after their
    /// last one is taken, so the thread that took it wakes the rest and stops the timer thread
    /// when it leaves. Returns the idle workers to wake, and whether the pool stops.
    mutating func removeWorker(_ worker: PoolWorker) -> (wake: [PoolWorker], poolStops: Bool) {
        self.workers.removeAll { $0 === worker }
        guard self.threadsShouldLeave else { return ([], false) }
        return (self.takeAllIdleWorkers(), true)
    }

    /// A reserved thread could not be started.
    mutating func threadStartFailed() {
        self.threadCount -= 1
        self.failedThreadStarts += 1
    }

    /// Adds a runnable queue or task job at the tail (`ahead`, for delayed work that fell due: at
    /// the head, behind the due work already there, so due work runs in the order it fell due).
    /// Returns the idle worker to wake, if one should be: not when the threads that will look at
    /// the run queue anyway (spinning ones, and the caller if it is a pool thread
    /// about to look) are at least as many as the queues and jobs there.
    mutating func enqueue(_ runnable: PoolRunnable, ahead: Bool, callerWillDequeue: Bool) -> PoolWorker? {
        if ahead {
            // Behind the due work already waiting: due work runs in the order it fell due.
            self.runQueue.insert(runnable, at: self.dueAtHead)
            self.dueAtHead += 1
        } else {
            self.runQueue.append(runnable)
        }
        // Threads that will look at the run queue anyway: the caller, and the spinning ones.
        let lookers = self.spinningCount + (callerWillDequeue ? 1 : 0)
        if self.runQueue.count <= lookers { return nil }
        return self.popIdleWorker()
    }

    /// Whether a thread out of work may watch the run queue before it sleeps: while fewer than
    /// half the pool's threads (at least one) already do. More watchers would only take the
    /// cores from the threads producing the work they watch for (Go's scheduler keeps its
    /// spinning threads to half the busy processors for the same reason).
    var maySpin: Bool { self.spinningCount < max(1, self.width / 2) }

    /// Whether a thread that has just run out of work watches before it sleeps. A `next` slot
    /// that holds a queue nobody watches is watched whatever this says (work conservation).
    var spinsAfterWork: Bool {
        #if SERIAL_SIMULATION
        return self.spinsInSimulation
        #else
        return true
        #endif
    }

    #if SERIAL_SIMULATION
    /// Off for a simulation run's own task pool (`SimulationTasks`): spinning after work is a
    /// performance choice, and each window was tens of scheduling points of every async run.
    var spinsInSimulation = true
    #endif

    /// A thread out of work starts watching the run queue before it sleeps.
    mutating func startSpinning() {
        self.spinningCount += 1
    }

    /// The thread stopped watching (it saw work, or the window passed).
    mutating func stopSpinning() {
        self.spinningCount -= 1
    }

    /// Takes the queue or job at the head of the run queue.
    mutating func dequeue() -> PoolRunnable? {
        guard let runnable = self.runQueue.popFirst() else { return nil }
        if self.dueAtHead > 0 { self.dueAtHead -= 1 }
        return runnable
    }

    /// Whether no thread is left to run a job (the pool has stopped).
    var hasStopped: Bool { self.isStopping && self.threadCount == 0 }

    /// A worker found nothing to run and will wait until another thread sets its `isWoken`.
    mutating func goIdle(_ worker: PoolWorker) {
        worker.isWoken = false
        self.idleWorkers.append(worker)
    }

    /// A watcher that saw only turnover dozes: idle (anyone may wake it), but counted as one
    /// that will watch the `next` slots again when its doze ends.
    mutating func goDozing(_ worker: PoolWorker) {
        self.goIdle(worker)
        self.dozingCount += 1
    }

    /// A doze ended: woken (already off the idle list), or its time passed (it leaves the idle
    /// list itself, and will look for work).
    mutating func endDozing(_ worker: PoolWorker) {
        self.dozingCount -= 1
        guard !worker.isWoken else { return }
        self.idleWorkers.removeAll { $0 === worker }
        #if SERIAL_SIMULATION
        worker.willLook = true
        #endif
    }

    /// Threads that watch the `next` slots now (spinning) or after a doze.
    var nextWatcherCount: Int { self.spinningCount + self.dozingCount }

    /// An idle worker to wake when the run queue holds more queues and jobs than the spinning
    /// threads will take: after a spinner stopped without looking at the run queue (it stole a
    /// `next` queue), since enqueues made while it spun woke nobody, counting on it.
    mutating func wakeIfRunQueueOutnumbersSpinners() -> PoolWorker? {
        guard self.runQueue.count > self.spinningCount else { return nil }
        return self.popIdleWorker()
    }

    /// Wakes the most recently idle worker, if any (it will look for work).
    mutating func wakeIdleWorker() -> PoolWorker? {
        self.popIdleWorker()
    }

    private mutating func popIdleWorker() -> PoolWorker? {
        guard let worker = self.idleWorkers.popLast() else { return nil }
        worker.isWoken = true
        #if SERIAL_SIMULATION
        worker.willLook = true
        #endif
        return worker
    }

    /// Whether a thread that found no work should leave: the pool stops, or it has more free
    /// threads than its width (a stand-in for a blocked thread that has come back). Counts the
    /// thread out if so.
    mutating func retireIfSurplus() -> Bool {
        guard self.threadsShouldLeave || self.threadCount - self.blockedCount > self.width else { return false }
        self.threadCount -= 1
        return true
    }

    /// A pool thread is about to block. Returns whether a stand-in thread must be started (it
    /// is reserved already).
    mutating func beginBlocking() -> Bool {
        self.blockedCount += 1
        guard self.threadCount - self.blockedCount < self.width else { return false }
        self.threadCount += 1
        return true
    }

    /// A pool thread's blocking wait ended.
    mutating func endBlocking() {
        self.blockedCount -= 1
    }

    /// Records a new queue; `false` when the pool is closed.
    mutating func attach(_ core: QueueCore) -> Bool {
        guard !self.isClosed else { return false }
        self.attached[ObjectIdentifier(core)] = Unmanaged.passUnretained(core)
        self.attachCount += 1
        self.attachOrder[ObjectIdentifier(core)] = self.attachCount
        return true
    }

    /// A queue has exited. Returns the idle workers to wake if that lets the pool stop.
    mutating func detach(_ core: QueueCore) -> [PoolWorker] {
        self.attached[ObjectIdentifier(core)] = nil
        self.attachOrder[ObjectIdentifier(core)] = nil
        return self.threadsShouldLeave ? self.takeAllIdleWorkers() : []
    }

    /// Refuses new queues from now on. Returns the queues still attached, retained (the caller
    /// shuts them down outside the lock).
    mutating func close() -> [QueueCore] {
        self.isClosed = true
        let inAttachOrder = self.attached.sorted { self.attachOrder[$0.key]! < self.attachOrder[$1.key]! }
        return inAttachOrder.map { $0.value.takeUnretainedValue() }
    }

    /// Threads leave once the attached queues have exited. Returns the idle workers to wake.
    mutating func stop() -> [PoolWorker] {
        self.isClosed = true
        self.isStopping = true
        return self.threadsShouldLeave ? self.takeAllIdleWorkers() : []
    }

    private mutating func takeAllIdleWorkers() -> [PoolWorker] {
        var woken: [PoolWorker] = []
        while let worker = self.popIdleWorker() { woken.append(worker) }
        return woken
    }
}

/// What a pool thread runs: a serial queue's turn, or one job of a task that prefers the pool
/// (`WorkerPool` as a `TaskExecutor`).
enum PoolRunnable {
    case queue(QueueCore)
    case job(UnownedJob)

    /// A runnable as one machine word, for a `LocalRunQueue`'s atomic slots: a retained queue's
    /// address, or a job's address with its lowest bit set (both are at least 16-byte aligned).
    struct Word {
        let rawValue: UInt

        /// Takes `runnable` into a word: a queue is retained until `runnable` takes it back.
        init(_ runnable: PoolRunnable) {
            switch runnable {
            case .queue(let core): self.rawValue = UInt(bitPattern: PoolWorker.retainedPointer(to: core))
            case .job(let job): self.rawValue = UInt(bitPattern: unsafeBitCast(job, to: UnsafeRawPointer.self)) | 1
            }
        }

        init(rawValue: UInt) {
            self.rawValue = rawValue
        }

        /// The runnable, owning again the queue's reference (once per word taken).
        var runnable: PoolRunnable {
            if self.rawValue & 1 != 0 {
                return .job(unsafeBitCast(UnsafeRawPointer(bitPattern: self.rawValue & ~1)!, to: UnownedJob.self))
            }
            return .queue(Unmanaged<QueueCore>.fromOpaque(UnsafeRawPointer(bitPattern: self.rawValue)!).takeRetainedValue())
        }
    }
}
