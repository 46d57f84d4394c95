import Synchronization

/// The engine of a `WorkerPool`: its threads, the run queue of runnable serial queues, and its
/// timer. Queue cores and pool threads retain it; the public `WorkerPool` only starts and stops it.
///
/// Where work waits: in each pool thread's `next` slot (filled by its own turns, whether or not
/// another thread is free) and own run queue (`PoolWorker.local`, while every other thread is
/// busy), which its thread fills and takes from without any lock; and in the pool's run queue
/// (the injection queue, under the mutex), for work from outside the pool, for due delayed work,
/// and for other work made runnable while a pool thread is free. A thread out of work looks at
/// the run queue, then steals half of another thread's own run queue; a `next` queue it takes
/// only after watching it wait `nextPatienceNanoseconds` (`spinBeforeSleeping`).
///
/// Locking: the pool's mutex is a leaf. A queue's mutex may be held while taking it (a `sync`
/// caller telling the pool it blocks), never the other way round: the pool never takes a queue's
/// mutex while it holds its own.
final class PoolCore: @unchecked Sendable {  // all mutable state is guarded by `mutex`
    /// The most items one turn takes from a queue, so one busy queue cannot hold a thread for long.
    static let batchLimit = 64
    /// The most same-thread hops through `next` in a row before the thread looks at the run queue
    /// while other work waits (due delayed work waiting there ends a chain at once: see `runTurns`).
    static let consecutiveHopLimit = 64
    /// A pooled queue's FIFO starts this small: many thousands of them may exist at once.
    static let initialQueueCapacity = 1
    /// How long a thread out of work watches the run queue before it sleeps (as a dedicated
    /// worker does): work arriving meanwhile costs an atomic load instead of a futex wake-up.
    static let spinWindowNanoseconds: UInt64 = 20_000
    /// A watching thread reads the clock once per this many looks at the hints.
    #if SERIAL_SIMULATION
    // Each look is two scheduling points already, and each clock read one: 16 looks per read
    // made a 20 µs window about 660 points of a run (most of a small async scenario's).
    static let looksPerClockRead = 1
    #else
    static let looksPerClockRead = 16
    #endif
    /// How long a queue waits in a busy thread's `next` slot before a watching thread takes it:
    /// the bound of the pool's work conservation (runnable work never waits longer while a thread
    /// is free, plus the watcher's own scheduling). Below a wake-up's cost (a futex wake and a
    /// sleeping core's start: 5-50 µs on these VMs) and far above a hop (a few hundred ns), so a
    /// chain of hops stays on its thread and work that a long item holds up moves within 5 µs
    /// (Go waits about 3 µs before it steals a `runnext`).
    static let nextPatienceNanoseconds: UInt64 = 5_000
    /// How long a watch that saw only turnover lasts at least: two patiences, so a fill that stays
    /// in its slot from the watch's first look is taken before it ends.
    static let turnoverWatchNanoseconds: UInt64 = 2 * nextPatienceNanoseconds
    /// How long a free thread dozes after a watch that saw only turnover (every fill it watched
    /// was taken by its owner within the patience: a chain of hops on that thread, which it must
    /// not take). Without the doze a free thread beside a ping-pong would watch for as long as the
    /// ping-pong lasts: a whole core. With it, it watches `turnoverWatchNanoseconds` out of every
    /// doze plus watch (by design; under load, the watcher mostly takes the chain instead: see the
    /// "Actor hops" article), and a queue left in a `next` slot
    /// behind an item that does not end waits at most the doze (plus the timed wait's lateness)
    /// plus the watch: the work-conservation bound while the free threads doze.
    static let dozeNanoseconds: UInt64 = 50_000

    let label: String
    let mutex = PthreadMutex()
    /// Broadcast when a thread leaves and when a queue detaches, for `shutdown` and release.
    let changed = PthreadCondition()
    // Guarded by `mutex`.
    @exclusivity(unchecked) private(set) var state: PoolState
    let timers: PoolTimers
    /// `state.runQueue.count`, stored under the lock, read without it by spinning threads.
    private let runnableHint = SeamAtomic<Int>(0)
    /// `state.dueAtHead`, stored under the lock, read without it by a thread between two hops.
    private let dueHint = SeamAtomic<Int>(0)
    /// Threads out of work (looking for it, spinning, or idle), changed under the lock and read
    /// without it by a thread filling its `next` slot or own run queue (see `PoolWorker`).
    private let freeCount = SeamAtomic<Int>(0)
    /// Counts the times a thread told the free ones about work in its own run queue, under the
    /// lock; watching threads look again when it changes.
    private let localWorkNotices = SeamAtomic<Int>(0)
    /// `state.spinningCount`, stored under the lock, read without it by a thread filling its
    /// `next` slot: a watcher will take the queue after its patience, so nobody need be woken.
    private let watchingCount = SeamAtomic<Int>(0)
    #if SERIAL_SIMULATION
    /// Ghost: set when a watcher took a `next` queue before its patience (`checkStealIsPatient`).
    @exclusivity(unchecked) var earlySteal: String? = nil
    #endif
    #if SERIAL_LOCK_STATISTICS
    /// Turns and task jobs run, for lock acquisitions per unit of work (an instrumented build).
    let turnsRun = Atomic<Int>(0)
    let jobsRun = Atomic<Int>(0)
    #endif

    init(label: String, width: Int) {
        self.label = label
        self.state = PoolState(width: width)
        self.timers = PoolTimers(label: label)
        #if SERIAL_SIMULATION
        self.registerSimulationInvariants()
        #endif
    }

    /// Starts the pool's threads; on failure, the ones started leave again.
    func start() throws(WorkerThread.StartError) {
        self.mutex.withLock { self.state.reserveThreads(self.state.width) }
        for started in 0..<self.state.width {
            do {
                try self.startThread()
            } catch {
                self.mutex.lock()
                for _ in started..<self.state.width { self.state.threadStartFailed() }
                self.mutex.unlock()
                self.stop(waiting: true)
                throw error
            }
        }
    }

    /// Starts one reserved thread (detached: the pool waits for threads by counting them).
    private func startThread() throws(WorkerThread.StartError) {
        let thread = try WorkerThread(name: self.label, fallbackName: "WorkerPool") { [self] in
            self.threadMain(PoolWorker(pool: self))
        }
        thread.detach()
    }

    /// Whether the calling thread is one of this pool's threads.
    var isPoolThread: Bool { CurrentQueueStack.current.poolWorker?.pool === self }

    // MARK: Queues

    /// Records a queue created on the pool; `false` when the pool no longer takes queues.
    func attach(_ core: QueueCore) -> Bool {
        self.mutex.withLock { self.state.attach(core) }
    }

    /// A queue ran its last turn.
    func detach(_ core: QueueCore) {
        self.timers.disarm(core)
        self.mutex.lock()
        let woken = self.state.detach(core)
        let shouldLeave = self.state.threadsShouldLeave
        self.changed.broadcast()
        self.mutex.unlock()
        for worker in woken { worker.wakeUp.signal() }
        if shouldLeave { self.timers.stop() }
    }

    /// A queue has work and no owner. From a pool thread's own turn, it goes to that thread's
    /// `next` slot (it runs there after the turn: locality), or to its own run queue if `next` is
    /// taken; from outside the pool to the run queue's tail, waking an idle thread unless a
    /// spinning one will look. A `next` fill wakes nobody while no other thread is free or one
    /// already watches; otherwise it wakes an idle thread to watch, which takes the queue if it
    /// waits there longer than `nextPatienceNanoseconds` (the calling work may go on for long:
    /// work conservation, as a bound).
    func makeRunnable(_ core: QueueCore) {
        guard let worker = CurrentQueueStack.withCurrent({ $0.unretainedPoolWorker }) else {
            return self.enqueue(core)  // from outside any pool
        }
        worker._withUnsafeGuaranteedRef { self.makeRunnable(core, from: $0) }
    }

    /// `makeRunnable` on a pool thread (`worker`, of this pool or another).
    private func makeRunnable(_ core: QueueCore, from worker: PoolWorker) {
        guard worker.pool === self else { return self.enqueue(core) }  // from another pool
        guard worker.isInTurn, !worker.hasNext else { return self.pushLocal(.queue(core), on: worker) }
        #if SERIAL_SIMULATION
        worker.isPublishing = true
        defer { worker.isPublishing = false }
        #endif
        worker.fillNext(core)
        // Dekker with a thread becoming free (it adds to `freeCount`, then reads every `next`) and
        // with a watcher leaving (it subtracts from `watchingCount`, then reads every `next`).
        guard self.freeCount.load(ordering: .sequentiallyConsistent) > 0 else { return }
        guard self.watchingCount.load(ordering: .sequentiallyConsistent) == 0 else { return }
        self.mutex.lock()
        let idle = self.state.nextWatcherCount == 0 ? self.state.wakeIdleWorker() : nil
        self.mutex.unlock()
        idle?.wakeUp.signal()
    }

    /// A queue whose turn left work goes back behind the work waiting: at the run queue's tail
    /// while anything waits there (round robin with the pool's other queues), else behind this
    /// thread's own work (no lock while every other thread is busy).
    func requeue(_ core: QueueCore, from worker: PoolWorker) {
        // With nothing of its own left, this thread looks at the run queue next.
        let callerLooksNext = !worker.hasNext && worker.local.isEmpty
        if self.runnableHint.load(ordering: .relaxed) > 0 {
            return self.enqueue(.queue(core), ahead: false, lookingWorker: callerLooksNext ? worker : nil)
        }
        self.pushLocal(.queue(core), on: worker, callerLooksNext: callerLooksNext)
    }

    /// Queues `runnable` in this pool thread's own run queue, without the lock, while every other
    /// thread is busy; while one is free, in the pool's run queue instead (waking one as needed).
    /// A thread that became free between the two reads of `freeCount` may have missed the push:
    /// the second read (Dekker's, with `lookForWork`'s add, then scan) sees it, and the free
    /// threads are told. `callerLooksNext`: the caller takes the run queue's head next, if the
    /// runnable goes there.
    private func pushLocal(_ runnable: PoolRunnable, on worker: PoolWorker, callerLooksNext: Bool = false) {
        guard self.freeCount.load(ordering: .sequentiallyConsistent) == 0 else {
            return self.enqueue(runnable, ahead: false, lookingWorker: callerLooksNext ? worker : nil)
        }
        #if SERIAL_SIMULATION
        worker.isPublishingLocal = true
        defer { worker.isPublishingLocal = false }
        #endif
        let word = PoolRunnable.Word(runnable)
        guard worker.local.push(word) else { return self.moveLocalWorkToRunQueue(of: worker, adding: word) }
        guard self.freeCount.load(ordering: .sequentiallyConsistent) > 0 else { return }
        self.mutex.lock()
        // Watching threads look again; an idle one is woken, since watchers may take other work.
        self.localWorkNotices.add(1, ordering: .releasing)
        let idle = self.state.wakeIdleWorker()
        self.mutex.unlock()
        idle?.wakeUp.signal()
    }

    /// Moves what this thread's own run queue holds (and `adding`, after it) to the pool's run
    /// queue: when the ring is full (half of it), and when the thread is about to block (all).
    func moveLocalWorkToRunQueue(of worker: PoolWorker, adding: PoolRunnable.Word? = nil) {
        var words: [PoolRunnable.Word] = []
        worker.local.takeHalf(into: &words)
        if adding == nil { while !worker.local.isEmpty { worker.local.takeHalf(into: &words) } }
        if let adding { words.append(adding) }
        var woken: [PoolWorker] = []
        self.mutex.lock()
        for word in words {
            if let idle = self.state.enqueue(word.runnable, ahead: false, callerWillDequeue: false) { woken.append(idle) }
        }
        self.runnableHint.store(self.state.runQueue.count, ordering: .releasing)
        self.mutex.unlock()
        for idle in woken { idle.wakeUp.signal() }
    }

    /// Adds a queue to the run queue's tail (`ahead`: its head), waking an idle thread if one is
    /// needed.
    func enqueue(_ core: QueueCore, ahead: Bool = false) {
        self.enqueue(.queue(core), ahead: ahead, lookingWorker: nil)
    }

    /// Adds a runnable to the run queue, waking an idle thread if one is needed. `lookingWorker`:
    /// the calling pool thread, which looks at the run queue's head before any other work.
    private func enqueue(_ runnable: PoolRunnable, ahead: Bool, lookingWorker: PoolWorker?) {
        self.mutex.lock()
        let worker = self.state.enqueue(runnable, ahead: ahead, callerWillDequeue: lookingWorker != nil)
        if let lookingWorker {
            lookingWorker.mustLookAtRunQueue = true
            #if SERIAL_SIMULATION
            lookingWorker.willLook = true
            #endif
        }
        self.runnableHint.store(self.state.runQueue.count, ordering: .releasing)
        if ahead { self.dueHint.store(self.state.dueAtHead, ordering: .releasing) }
        self.mutex.unlock()
        // After unlocking: the worker is retained here, and it waits for `isWoken`, set above.
        worker?.wakeUp.signal()
    }

    /// The `WorkerPool` as the task executor its threads run jobs on: the identity tasks that
    /// prefer the pool were given (`WorkerPool.asUnownedTaskExecutor()`). Set once by the pool
    /// before any job can arrive; unowned, since the pool owns this core and tasks that prefer
    /// the pool keep it alive.
    nonisolated(unsafe) var taskExecutor: UnownedTaskExecutor? = nil
    /// Set when another executor took over the pool's task jobs (`WorkerPool.handOverTaskJobs`):
    /// its description, for the trap that turns away tasks preferring the pool itself. Set once,
    /// before any job can arrive, like `taskExecutor`.
    nonisolated(unsafe) var taskJobOwner: String? = nil

    /// Runs `job` (of a task that prefers the pool) on a pool thread, as soon as one is free:
    /// the same run queues and wake-ups as queues, so jobs get the pool's work conservation.
    ///
    /// - Precondition: the pool has not stopped (no thread would run the job); that traps.
    func enqueueJob(_ job: UnownedJob) {
        #if SERIAL_SIMULATION
        if SimulationTasks.refuses(job, enqueuedOn: self) { return }  // from outside its async run
        #endif
        if let worker = CurrentQueueStack.current.poolWorker, worker.pool === self {
            return self.pushLocal(.job(job), on: worker)  // a live pool thread: the pool runs
        }
        self.mutex.lock()
        if self.state.hasStopped {
            self.mutex.unlock()
            Misuse.poolJobAfterShutdown(label: self.label)
        }
        let worker = self.state.enqueue(.job(job), ahead: false, callerWillDequeue: false)
        self.runnableHint.store(self.state.runQueue.count, ordering: .releasing)
        self.mutex.unlock()
        worker?.wakeUp.signal()
    }

    // MARK: Blocking pool threads

    /// A pool thread is about to block; starts a stand-in if the pool would fall below its width.
    /// Only through `CurrentQueueStack.blocking`, which pairs it with `endBlocking`.
    func beginBlocking() {
        let mustStart = self.mutex.withLock { self.state.beginBlocking() }
        guard mustStart else { return }
        do {
            try self.startThread()
        } catch {
            // The pool runs narrower until the blocked thread returns; nothing is lost.
            self.mutex.withLock { self.state.threadStartFailed() }
        }
    }

    func endBlocking() {
        self.mutex.withLock { self.state.endBlocking() }
    }

    // MARK: Threads

    private func threadMain(_ worker: PoolWorker) {
        let stack = CurrentQueueStack.current
        stack.poolWorker = worker
        var ranSinceSpinning = false
        var isFree = false  // counted in `freeCount`
        // Held from a spin or a wake-up (and from the start) into the next look: a thread that
        // stopped watching or was woken looks before anything else can change.
        var holdsLock = true
        var leavingWakes: PoolWorker? = nil
        // Set when this thread's last watch saw only turnover: with a `next` slot still filled,
        // it dozes instead of watching again at once.
        var sawOnlyTurnover = false
        self.mutex.lock()
        self.state.addWorker(worker)
        while true {
            if !holdsLock {
                // This thread's own work, without the lock, unless the run queue is owed a look:
                // due delayed work waits there, or its turn came (own work and the run queue alternate).
                let runQueueIsOwed =
                    worker.mustLookAtRunQueue || self.dueHint.load(ordering: .acquiring) > 0
                    || (worker.tookOwnWorkLast && self.runnableHint.load(ordering: .relaxed) > 0)
                if !runQueueIsOwed, let word = worker.local.pop() {
                    worker.tookOwnWorkLast = true
                    self.run(word.runnable, on: worker, stack: stack)
                    ranSinceSpinning = true
                    continue
                }
                worker.tookOwnWorkLast = false
                worker.mustLookAtRunQueue = false
                self.mutex.lock()
                holdsLock = true
            }
            if let runnable = self.lookForWork(on: worker, isFree: &isFree) {
                let idle = self.wakeWatcherIfNeeded(besides: worker)
                self.mutex.unlock()
                holdsLock = false
                idle?.wakeUp.signal()
                self.run(runnable, on: worker, stack: stack)
                ranSinceSpinning = true
                continue
            }
            if self.state.retireIfSurplus() {
                // A thread woken to watch a `next` slot hands the watch on as it leaves.
                leavingWakes = self.wakeWatcherIfNeeded(besides: worker)
                break
            }
            // Once per stretch of work, never while idle (an idle pool causes no wake-ups); and
            // while a `next` slot holds a queue that nobody watches (work conservation).
            // After a watch that saw only turnover (a chain of hops runs on another thread), it
            // dozes, then watches again: whether a slot is filled at this instant says little
            // (the chain empties it at every hop), and waking for each fill would cost the chain.
            if sawOnlyTurnover && !ranSinceSpinning {
                sawOnlyTurnover = false
                self.doze(worker)
                ranSinceSpinning = true  // it watches once more, then sleeps if nothing turns over
                continue  // look again, under the lock
            }
            sawOnlyTurnover = false
            let mustWatch = self.state.nextWatcherCount == 0 && self.anyNextIsFilled(besides: worker)
            if ((ranSinceSpinning && self.state.spinsAfterWork) || mustWatch) && self.state.maySpin {
                ranSinceSpinning = false
                let watch = self.spinBeforeSleeping(on: worker)
                sawOnlyTurnover = watch.sawOnlyTurnover
                if let stolen = watch.stolen {
                    if isFree {
                        isFree = false
                        self.freeCount.subtract(1, ordering: .sequentiallyConsistent)
                    }
                    let idle = self.wakeWatcherIfNeeded(besides: worker)
                    // It counted as a thread that would look at the run queue, and leaves without.
                    let forRunQueue = self.state.wakeIfRunQueueOutnumbersSpinners()
                    self.mutex.unlock()
                    holdsLock = false
                    idle?.wakeUp.signal()
                    forRunQueue?.wakeUp.signal()
                    self.run(.queue(stolen), on: worker, stack: stack)
                    ranSinceSpinning = true
                    continue
                }
                continue  // look again, under the lock
            }
            ranSinceSpinning = false
            self.state.goIdle(worker)
            while !worker.isWoken {
                worker.wakeUp.wait(releasing: self.mutex)
            }
        }
        if isFree { self.freeCount.subtract(1, ordering: .sequentiallyConsistent) }
        let leaving = self.state.removeWorker(worker)
        self.changed.broadcast()
        self.mutex.unlock()
        for other in leaving.wake { other.wakeUp.signal() }
        leavingWakes?.wakeUp.signal()
        if leaving.poolStops { self.timers.stop() }
        stack.poolWorker = nil
    }

    /// Runs a queue's turns (and the hops they make) or a task job.
    private func run(_ runnable: PoolRunnable, on worker: PoolWorker, stack: CurrentQueueStack) {
        switch runnable {
        case .queue(let core): self.runTurns(startingWith: core, on: worker, stack: stack)
        case .job(let job):
            #if SERIAL_LOCK_STATISTICS
            self.jobsRun.add(1, ordering: .relaxed)
            #endif
            #if SERIAL_SIMULATION
            let task = SimulationTasks.willRun(job)  // an async run's record of its tasks
            defer { task?.didRun() }
            #endif
            job.runSynchronously(on: self.taskExecutor!)
        }
    }

    /// Under the lock: the run queue's head, else this thread's own work, else half of another
    /// thread's own run queue (`next` slots are taken only by a watcher, after its patience).
    /// Before it looks at other threads' work the thread counts itself free (so a later push goes
    /// to the run queue, or tells it, and a later `next` fill wakes a watcher), and it stays
    /// counted until it finds work.
    private func lookForWork(on worker: PoolWorker, isFree: inout Bool) -> PoolRunnable? {
        #if SERIAL_SIMULATION
        worker.willLook = false
        #endif
        var found = self.state.dequeue() ?? worker.local.pop()?.runnable
        if found == nil {
            if !isFree {
                isFree = true
                self.freeCount.add(1, ordering: .sequentiallyConsistent)
            }
            for other in self.state.workers where other !== worker {
                if let stolen = other.local.stealHalf(into: worker.local) {
                    found = stolen.runnable
                    break
                }
            }
        }
        guard let runnable = found else { return nil }
        self.runnableHint.store(self.state.runQueue.count, ordering: .relaxed)
        self.dueHint.store(self.state.dueAtHead, ordering: .relaxed)
        if isFree {
            isFree = false
            self.freeCount.subtract(1, ordering: .sequentiallyConsistent)
        }
        return runnable
    }

    /// Runs one turn of `core`, then of each queue its work put in this thread's `next` slot: at
    /// most `consecutiveHopLimit` hops in a row, and none once a queue whose delayed work fell due
    /// waits at the head of the run queue. Due work: the `next` queue goes to the run queue's tail
    /// and this thread looks at its head, so due work waits for the rest of one turn, not for a
    /// chain. At the hop limit: the `next` queue goes behind the work waiting (`requeue`), so the
    /// queues in this thread's own run queue get their turns too (were it sent to the run queue's
    /// head for this thread to look at, a chain would come straight back and starve them); with
    /// nothing waiting in either, the chain goes on (a move to the pool's run queue would hand it
    /// to a watching thread: a hop across cores every 64 hops).
    private func runTurns(startingWith core: QueueCore, on worker: PoolWorker, stack: CurrentQueueStack) {
        worker.isInTurn = true
        var current = core
        var hops = 0
        while true {
            #if SERIAL_LOCK_STATISTICS
            self.turnsRun.add(1, ordering: .relaxed)
            #endif
            current.runPooledTurn(on: worker, stack: stack)
            guard let next = worker.takeNext() else { break }
            hops += 1
            if self.dueHint.load(ordering: .acquiring) > 0 {
                // The queues whose delayed work fell due have this thread next.
                self.enqueue(.queue(next), ahead: false, lookingWorker: worker)
                break
            }
            if hops >= Self.consecutiveHopLimit {
                // Nothing waits that the chain could starve: it goes on, on this thread.
                guard worker.local.isEmpty && self.runnableHint.load(ordering: .relaxed) == 0 else {
                    self.requeue(next, from: worker)
                    break
                }
                hops = 0
            }
            current = next
        }
        worker.isInTurn = false
    }

    #if SERIAL_SIMULATION
    /// Threads of this pool out of work sleep at once, without watching the run queue first
    /// (unless a `next` slot holds a queue that nobody watches).
    func neverSpin() {
        self.mutex.withLock { self.state.spinsInSimulation = false }
    }
    #endif

    /// Under the lock: whether another thread's `next` slot holds a queue (read after this
    /// thread counted itself free, or stopped watching: Dekker's with `makeRunnable`).
    private func anyNextIsFilled(besides worker: PoolWorker) -> Bool {
        self.state.workers.contains { $0 !== worker && $0.nextWord != 0 }
    }

    /// Under the lock, when this thread takes work: if a `next` slot holds a queue and nobody is
    /// left to watch it, an idle thread to wake (it will watch).
    private func wakeWatcherIfNeeded(besides worker: PoolWorker) -> PoolWorker? {
        guard self.state.nextWatcherCount == 0, self.anyNextIsFilled(besides: worker) else { return nil }
        return self.state.wakeIdleWorker()
    }

    /// Watches the run queue and the other threads' `next` slots without the lock: for a few
    /// microseconds, and for as long as a `next` slot holds a queue. A queue that stays in one
    /// `next` slot (the same fill: its word is tagged) for `nextPatienceNanoseconds` is taken and
    /// returned, to run now. Called and returns with the mutex held; with no queue returned, the
    /// caller looks at the run queue again.
    ///
    /// It does not `sched_yield` while it watches: a watching thread counts as one that will look
    /// (enqueuing wakes no idle thread for it), so a watcher that gave its core to another
    /// process's thread left runnable queues waiting for a timeslice (measured under load:
    /// pooled `sync_contended` 1,224–18,942 ns yielding, 210–444 not).
    ///
    /// A watch that saw fills turn over (taken by their owners within the patience) and took none
    /// ends after `turnoverWatchNanoseconds` (`sawOnlyTurnover`): the caller then dozes rather than
    /// watch a chain of hops for as long as it lasts.
    private func spinBeforeSleeping(on worker: PoolWorker) -> (stolen: QueueCore?, sawOnlyTurnover: Bool) {
        self.state.startSpinning()
        self.watchingCount.add(1, ordering: .sequentiallyConsistent)
        let notices = self.localWorkNotices.load(ordering: .relaxed)
        let workers = self.state.workers  // a copy (no allocation): the array may change under the lock
        self.mutex.unlock()
        let start = ClockReads.monotonicNanoseconds()
        let deadline = start &+ Self.spinWindowNanoseconds
        var sawTurnover = false
        // The last slot whose fill turned over (a chain of hops runs there): the next look at the
        // slots starts after it, so a fill behind it is seen too.
        var turnedOver: PoolWorker? = nil
        // The fill watched: its slot's owner, its word, and when this thread first saw it.
        var watched: (owner: PoolWorker, word: UInt, since: UInt64)? = nil
        var stolen: QueueCore? = nil
        watching: while true {
            for _ in 0..<Self.looksPerClockRead {
                if self.runnableHint.load(ordering: .acquiring) != 0
                    || self.localWorkNotices.load(ordering: .acquiring) != notices
                {
                    break watching
                }
            }
            let now = ClockReads.monotonicNanoseconds()
            if let fill = watched, fill.owner.nextWord == fill.word {
                #if SERIAL_SIMULATION
                worker.watchedReads += 1
                #endif
                if now &- fill.since >= Self.nextPatienceNanoseconds {
                    #if SERIAL_SIMULATION
                    self.checkStealIsPatient(from: fill.owner)
                    #endif
                    stolen = fill.owner.stealNext(ifStill: fill.word)
                    if stolen != nil { break }
                    watched = nil
                }
            } else {
                if let fill = watched {  // its owner took it (or a watcher did)
                    sawTurnover = true
                    turnedOver = fill.owner
                }
                watched = nil
                #if SERIAL_SIMULATION
                worker.watchedReads = 0
                #endif
                let first = turnedOver.flatMap { owner in workers.firstIndex { $0 === owner } }.map { $0 + 1 } ?? 0
                for offset in 0..<workers.count {
                    let other = workers[(first + offset) % workers.count]
                    guard other !== worker else { continue }
                    let word = other.nextWord
                    if word != 0 {
                        // Timed from a clock read after the word was read: a fill made after
                        // `now` was read must not be credited with the time before it existed.
                        watched = (other, word, ClockReads.monotonicNanoseconds())
                        break
                    }
                }
            }
            if watched == nil && now >= deadline { break }
            // A watch that saw only turnover ends, unless it watches a fill of another slot, which
            // it keeps watching until it is taken or has waited the patience.
            if sawTurnover && now &- start >= Self.turnoverWatchNanoseconds
                && (watched == nil || watched?.owner === turnedOver)
            {
                break
            }
        }
        #if SERIAL_SIMULATION
        worker.watchedReads = 0
        #endif
        self.mutex.lock()
        self.state.stopSpinning()
        self.watchingCount.subtract(1, ordering: .sequentiallyConsistent)
        return (stolen, stolen == nil && sawTurnover)
    }

    /// Under the lock: sleeps idle for `dozeNanoseconds`, or until woken, counted meanwhile as a
    /// watcher of the `next` slots (`watchingCount`, `PoolState.dozingCount`), so a `next` fill
    /// wakes nobody. Returns with the lock held; the caller looks for work, then watches if a
    /// slot is still filled. The add to `watchingCount` comes after this thread read the slots
    /// (`mustWatch`) with the lock held: a fill in between that saw no watcher waits for the lock,
    /// then finds this thread dozing (`nextWatcherCount`).
    private func doze(_ worker: PoolWorker) {
        self.state.goDozing(worker)
        self.watchingCount.add(1, ordering: .sequentiallyConsistent)
        let wakeAt = ClockReads.monotonicNanoseconds() &+ Self.dozeNanoseconds
        while !worker.isWoken && ClockReads.monotonicNanoseconds() < wakeAt {
            worker.wakeUp.wait(releasing: self.mutex, until: MonotonicInstant(nanoseconds: wakeAt))
        }
        self.state.endDozing(worker)
        // Dekker's with `makeRunnable`, as when a watch ends: the caller reads the slots next.
        self.watchingCount.subtract(1, ordering: .sequentiallyConsistent)
    }

    // MARK: Stopping

    /// Refuses new queues and returns the attached ones (for `WorkerPool.shutdown`).
    func close() -> [QueueCore] {
        self.mutex.withLock { self.state.close() }
    }

    /// Threads leave once every attached queue has exited. With `waiting`, returns only after
    /// every thread (and the timer thread) has left.
    func stop(waiting: Bool) {
        self.mutex.lock()
        let woken = self.state.stop()
        let shouldLeave = self.state.threadsShouldLeave
        self.mutex.unlock()
        for worker in woken { worker.wakeUp.signal() }
        if shouldLeave { self.timers.stop() }
        guard waiting else { return }
        // From another pool's thread: that pool keeps its width while this one waits.
        CurrentQueueStack.current.blocking {
            self.mutex.lock()
            while self.state.threadCount > 0 {
                self.changed.wait(releasing: self.mutex)
            }
            self.mutex.unlock()
            self.timers.waitUntilStopped()
        }
    }

    /// Waits until no queue is attached.
    func waitUntilNoQueueIsAttached() {
        CurrentQueueStack.current.blocking {
            self.mutex.lock()
            while !self.state.attached.isEmpty {
                self.changed.wait(releasing: self.mutex)
            }
            self.mutex.unlock()
        }
    }

    var attachedCount: Int { self.mutex.withLock { self.state.attached.count } }
    var threadCount: Int { self.mutex.withLock { self.state.threadCount } }
}
