import Synchronization

/// The shared heart of a `SerialQueue`: its mutex, its worker's wake-up, its state, and the
/// worker loop. The worker thread retains the core, never the `SerialQueue`, so releasing the
/// last `SerialQueue` reference is what ends the worker.
final class QueueCore: @unchecked Sendable {  // all mutable state is guarded by `mutex`
    let label: String
    /// The pool whose threads run this queue's work; `nil` for a queue with its own worker thread.
    let pool: PoolCore?
    /// `pool`, unretained, for the hop's path (`perform`): `pool` keeps it alive, and the
    /// optimizer retains and releases a class `let` around each call it is passed to.
    private let unretainedPool: Unmanaged<PoolCore>?
    /// The most `async` items that may wait for the worker (`Int.max`: no bound).
    let maximumQueued: Int
    let mutex = PthreadMutex()
    /// The worker's own wake-up: only the worker ever waits on it. `nil` for a pooled queue,
    /// which has no thread of its own.
    let workAvailable: PthreadCondition?
    /// Broadcast when the worker takes the FIFO (or a returning `sync` body passes the queue to
    /// the turn at its head) while producers wait for room (`maximumQueued`), and when the
    /// worker leaves its loop (`shutdown` callers); each waiter re-checks what it waits for.
    /// Created under the lock by the first waiter (`waitersCondition()`): most queues never
    /// have one, and 100k pooled queues should not pay for it.
    @exclusivity(unchecked) private var waiters: PthreadCondition? = nil
    // Guarded by `mutex`; runtime exclusivity checks on this hot path cost more than the lock.
    @exclusivity(unchecked) var state: QueueState
    /// Set by `suspend` and `shutdown(.cancelPending)` so the worker stops a batch midway;
    /// read without the lock once per item (a relaxed load), re-checked under the lock.
    let interrupted = SeamAtomic<Bool>(false)
    /// FIFO items run so far (`statistics`, `StallWatchdog`).
    let progress = QueueProgress()
    /// The kernel's id of the worker thread, set as it starts (for stall reports). A plain
    /// `Atomic`, not a `SeamAtomic`: it hands nothing over, it only names a thread in a report.
    let workerSystemID = Atomic<Int32>(0)
    /// Set when work arrives for a worker that is spinning before sleeping (see `spinBeforeSleeping`).
    let spinningWorkerNudged = SeamAtomic<Bool>(false)
    /// How long the worker watches for new work before it sleeps.
    static let spinWindowNanoseconds: UInt64 = 20_000
    /// The lock-free door through which `sync` enters an idle queue (see `FastPath`).
    let fastPath = SeamAtomic<UInt8>(FastPath.closed)
    #if SERIAL_SIMULATION
    /// Ghost for the one-body invariant: bodies of this queue running now, on any thread.
    @exclusivity(unchecked) var simulationBodies = 0
    #endif

    /// States of `fastPath`. The door is opened only under the lock, when the queue is idle
    /// (worker asleep, FIFO empty, not suspended, accepting); every decision under the lock
    /// first closes it (`lockState`), so while it is open nothing else can be going on.
    enum FastPath {
        /// Decisions go through the lock.
        static let closed: UInt8 = 0
        /// The queue is idle: one compare-and-swap takes it for a `sync` body.
        static let open: UInt8 = 1
        /// A `sync` body that came through the door runs now; it reopens the door when done.
        static let held: UInt8 = 2
        /// As `held`, but a lock holder has recorded that body as the owner in `state`: it must
        /// leave through the lock, so its leaving is decided with everything else.
        static let heldAndRecorded: UInt8 = 3
    }

    init(label: String, maximumQueued: Int, pool: PoolCore? = nil) {
        self.label = label
        self.maximumQueued = maximumQueued
        self.pool = pool
        self.unretainedPool = pool.map { Unmanaged.passUnretained($0) }
        if pool != nil {
            self.workAvailable = nil
            self.state = QueueState(pooledWithInitialCapacity: PoolCore.initialQueueCapacity)
            self.openFastPathIfIdle()  // idle from the start: the first sync takes the door
        } else {
            self.workAvailable = PthreadCondition()
            self.state = QueueState()
        }
        #if SERIAL_SIMULATION
        self.registerSimulationInvariants()
        #endif
    }

    // MARK: Waiters for room and for the worker's exit

    /// Under the lock: the condition a producer waiting for room or a `shutdown` caller waits
    /// on, created by the first of them.
    func waitersCondition() -> PthreadCondition {
        if let waiters = self.waiters { return waiters }
        let waiters = PthreadCondition()
        self.waiters = waiters
        return waiters
    }

    /// Under the lock: the condition to broadcast (after unlocking) when room appeared, if a
    /// producer waits for it.
    var roomWaitersToWake: PthreadCondition? { self.state.roomWaiters > 0 ? self.waiters : nil }

    /// Under the lock: the worker left its loop; wakes `shutdown` callers waiting for it.
    func announceWorkerExit() {
        self.waiters?.broadcast()
    }

    // MARK: The lock and the door

    /// Takes the mutex and closes the fast-path door, so `state` is the whole truth.
    @inline(__always)
    func lockState() {
        self.mutex.lock()
        self.closeFastPath()
    }

    /// Checks the state's invariants (debug builds) and releases the mutex.
    @inline(__always)
    func unlockState() {
        self.state.checkInvariants()
        self.mutex.unlock()
    }

    /// Under the lock: closes the door; if a `sync` body that came through it is running,
    /// records it as the owner (its leave then comes through the lock).
    @inline(__always)
    func closeFastPath() {
        while true {
            switch self.fastPath.load(ordering: .acquiring) {
            case FastPath.open:
                if self.fastPath.compareExchange(
                    expected: FastPath.open, desired: FastPath.closed, ordering: .acquiringAndReleasing
                ).exchanged { return }
            case FastPath.held:
                if self.fastPath.compareExchange(
                    expected: FastPath.held, desired: FastPath.heldAndRecorded, ordering: .acquiringAndReleasing
                ).exchanged {
                    self.state.recordDoorEnteredSyncCaller()
                    return
                }
            default:
                return
            }
        }
    }

    /// Under the lock: opens the door if the queue is idle.
    @inline(__always)
    func openFastPathIfIdle() {
        if self.state.mayOpenDoor { self.fastPath.store(FastPath.open, ordering: .releasing) }
    }

    /// Carries out a wake decision made under the lock.
    @inline(__always)
    func perform(_ action: QueueState.WakeAction) {
        switch action {
        case .none: return
        case .wakeWorker:
            // Pooled: "wake the worker" means "put the queue in its pool's run queue".
            if let pool = self.unretainedPool {
                pool._withUnsafeGuaranteedRef { $0.makeRunnable(self) }
            } else {
                self.workAvailable!.signal()
            }
        case .nudgeSpinningWorker: self.spinningWorkerNudged.store(true, ordering: .releasing)
        }
    }

    // MARK: Producers

    /// Appends work to the FIFO, waking the worker only if it sleeps.
    ///
    /// - Complexity: O(1) amortised; one lock, and one signal at most (after unlocking).
    /// When `bounded` (`async`), a full queue makes the caller wait for room, unless it runs
    /// this queue's own work (waiting would deadlock: it is admitted over the bound). Executor
    /// jobs are never held back: blocking a cooperative thread could stall the whole pool.
    @inline(__always)
    func submit(_ work: QueueWork, bounded: Bool, operation: @autoclosure () -> String) {
        self.lockState()
        if bounded && self.state.fifo.count >= self.maximumQueued { self.waitForRoom() }
        guard self.state.isAccepting else {
            self.unlockState()
            Misuse.useAfterShutdown(label: self.label, operation: operation())
        }
        let action = self.state.submit(work)
        let watchdogs = self.state.takeArmedWatchdogs()
        self.unlockState()
        self.perform(action)
        watchdogs.wake()
    }

    /// What `trySubmit` did.
    enum Admission {
        case accepted
        case shutDown
        case full
    }

    /// Like `submit`, but reports a shut-down (or, when `bounded`, full) queue instead of
    /// trapping or waiting.
    func trySubmit(_ work: QueueWork, bounded: Bool) -> Admission {
        self.lockState()
        guard self.state.isAccepting else {
            self.unlockState()
            return .shutDown
        }
        if bounded && self.state.fifo.count >= self.maximumQueued {
            self.unlockState()
            return .full
        }
        let action = self.state.submit(work)
        let watchdogs = self.state.takeArmedWatchdogs()
        self.unlockState()
        self.perform(action)
        watchdogs.wake()
        return .accepted
    }

    /// Waits, with the mutex held, until the FIFO has room or the queue stops accepting. A wait
    /// that closes a cycle of waits across queues traps, naming it (see `QueueWaitGraph`).
    @inline(never)
    private func waitForRoom() {
        guard !self.isCurrent else { return }
        let stack = CurrentQueueStack.current
        self.state.beginWaitingForRoom()
        QueueWaitGraph.beginWaiting(stack, for: self, .room)
        stack.blocking {
            while self.state.isAccepting && self.state.fifo.count >= self.maximumQueued {
                self.waitersCondition().wait(releasing: self.mutex)
                self.closeFastPath()
            }
        }
        QueueWaitGraph.endWaiting(stack)
        self.state.endWaitingForRoom()
    }

    /// Adds delayed work, trapping on a shut-down queue (`asyncAfter`).
    func schedule(_ handle: DelayedWork, operation: StaticString) {
        if !self.trySchedule(handle) {
            handle.cancel()
            Misuse.useAfterShutdown(label: self.label, operation: "\(operation)")
        }
    }

    /// Adds delayed work; `false` when the queue no longer accepts work.
    func trySchedule(_ handle: DelayedWork) -> Bool {
        self.lockState()
        guard self.state.isAccepting else {
            self.unlockState()
            return false
        }
        if let pool = self.pool {
            // Armed under the queue's lock, as at the end of a turn.
            if let deadline = self.state.schedulePooled(handle) { pool.timers.arm(deadline, for: self) }
            self.unlockState()
            return true
        }
        let action = self.state.schedule(handle)
        self.unlockState()
        self.perform(action)
        return true
    }

    var isCurrent: Bool { CurrentQueueStack.current.holds(self) }

    // MARK: Sync

    /// Blocks until the calling thread owns the queue: at once if it is idle (one
    /// compare-and-swap through the door, or under the lock), otherwise at its turn in the FIFO,
    /// woken on its own condition variable (on a dedicated queue, or next in line behind a `sync`
    /// body, after watching for it for a few microseconds). The turn is handed over by the
    /// worker (a pool thread) that reaches it, or by the `sync` body ahead of it as it leaves.
    ///
    /// - Returns: Whether it came through the door (then `leaveSync` tries the door first).
    @inline(__always)
    func enterSync(_ stack: CurrentQueueStack) -> Bool {
        if self.fastPath.compareExchange(
            expected: FastPath.open, desired: FastPath.held, ordering: .acquiring
        ).exchanged {
            return true
        }
        self.enterSyncThroughTheLock(stack)
        return false
    }

    private func enterSyncThroughTheLock(_ stack: CurrentQueueStack) {
        self.lockState()
        guard self.state.isAccepting else {
            self.unlockState()
            Misuse.useAfterShutdown(label: self.label, operation: "sync")
        }
        if self.state.tryEnterSync(thread: stack.systemThreadID) {
            let watchdogs = self.state.takeArmedWatchdogs()
            self.unlockState()
            watchdogs.wake()
            return
        }
        stack.awaitTurn()
        self.perform(self.state.submitSyncTurn(Unmanaged.passUnretained(stack)))
        // Next in line behind a `sync` body: that body's leave passes the queue straight here.
        let grantedByABody = self.state.owner == .syncCaller && self.state.fifo.count == 1
        // A sleeping watchdog must hear of this wait too (the queue may be suspended). Woken
        // under this queue's lock: the watchdog never takes a queue's lock while holding its own.
        self.state.takeArmedWatchdogs().wake()
        QueueWaitGraph.beginWaiting(stack, for: self, .turn)
        // A pool thread that blocks here gets a stand-in, so the pool keeps its width.
        stack.blocking {
            if !stack.isTurnGranted && (self.pool == nil || grantedByABody) {
                // A turn that comes within the watch costs no sleep; the flag is re-read under the
                // lock. On a pooled queue only when the turn will come from a `sync` body running
                // on another thread: one run by a pool thread often waits for the very core a
                // watcher would hold (measured worse, spinning or yielding; see
                // `CurrentQueueStack.watchForTurn`).
                self.unlockState()
                stack.watchForTurn()
                self.lockState()
            }
            while !stack.isTurnGranted {
                stack.turnGranted.wait(releasing: self.mutex)
            }
        }
        self.unlockState()
        QueueWaitGraph.endWaiting(stack)
    }

    /// Gives the queue back after a `sync` body returned (or threw).
    @inline(__always)
    func leaveSync(enteredThroughTheDoor: Bool) {
        // Nothing happened meanwhile: the queue is idle again, exactly as the body found it.
        if enteredThroughTheDoor,
            self.fastPath.compareExchange(
                expected: FastPath.held, desired: FastPath.open, ordering: .releasing
            ).exchanged
        {
            return
        }
        self.leaveSyncThroughTheLock(enteredThroughTheDoor: enteredThroughTheDoor)
    }

    private func leaveSyncThroughTheLock(enteredThroughTheDoor: Bool) {
        self.mutex.lock()
        if enteredThroughTheDoor {
            assert(
                self.fastPath.load(ordering: .relaxed) == FastPath.heldAndRecorded,
                "internal inconsistency: a door-entered sync body was not recorded as the owner")
            self.fastPath.store(FastPath.closed, ordering: .relaxed)
        } else {
            self.closeFastPath()
        }
        if let next = self.state.passToNextSyncCaller(pooled: self.pool != nil, progress: self.progress.count) {
            // Counted as it starts, as a worker counts a turn it hands over.
            self.progress.itemRan()
            let waiter = next.takeUnretainedValue()
            waiter.grantTurn()
            // Signalled under the lock, as in `handOff`: the waiter's condition lives only as long as its thread.
            waiter.turnGranted.signal()
            // The turn left the FIFO: room for a producer waiting in a bounded queue, as when a
            // worker takes the FIFO (no worker may take it before this caller's body returns).
            let roomWaiters = self.roomWaitersToWake
            self.unlockState()
            roomWaiters?.broadcast()
            return
        }
        let action = self.state.leaveSync()
        self.openFastPathIfIdle()
        self.unlockState()
        self.perform(action)
    }

    // MARK: Worker

    /// The worker thread's whole life: drain, sleep, repeat, until released or shut down and empty.
    func workerMain() {
        let stack = CurrentQueueStack.current
        self.workerSystemID.store(stack.systemThreadID, ordering: .relaxed)
        stack.push(self)
        var batch = RingBuffer<QueueWork>(initialCapacity: 256)  // swapped with the FIFO, never reallocated

        var ranSinceSleeping = false
        self.lockState()
        while true {
            self.moveDueDelayedWork()
            if self.state.takeBatch(into: &batch, progress: self.progress.count) {
                self.interrupted.store(false, ordering: .relaxed)
                let roomWaiters = self.roomWaitersToWake
                let watchdogs = self.state.takeArmedWatchdogs()  // delayed work fell due
                self.unlockState()
                roomWaiters?.broadcast()
                watchdogs.wake()
                let batchSize = batch.count
                self.run(&batch)
                batch.shrinkIfOversized(forRecentCount: batchSize)
                self.lockState()
                self.state.finishBatch()
                ranSinceSleeping = true
                continue
            }
            if self.state.workerShouldExit {
                if self.runShutdownHandlers() { continue }
                break
            }
            if ranSinceSleeping {
                // Whether or not it saw a nudge, work may have arrived while the lock was free:
                // look again before sleeping.
                ranSinceSleeping = false
                self.spinBeforeSleeping()
                continue
            }
            // Going to sleep: give back what a burst made either ring grow to.
            let freed = batch.shrinkIfOversized(forRecentCount: 0) + self.state.shrinkFIFOIfOversized()
            if freed >= Self.slotsWorthTrimming {
                self.returnFreedMemory()
                continue  // the lock was released meanwhile: look at the state again before sleeping
            }
            self.blockingWaitForWork()
        }
        self.state.workerExited()
        self.announceWorkerExit()
        self.unlockState()
        stack.pop(self)
    }

    /// Under the lock: moves delayed work that has fallen due into the FIFO, and wakes the
    /// watchdogs asleep armed on this queue if it had any (due work is work: they must hear of it
    /// even when no turn takes it, on a suspended queue or while the pool's threads are busy).
    /// Woken under this queue's lock, as in `enterSync`: a watchdog never takes a queue's lock
    /// while holding its own.
    @inline(__always)
    func moveDueDelayedWork() {
        guard !self.state.delayed.isEmpty else { return }
        let queued = self.state.fifo.count
        self.state.moveDueDelayedWork(now: .now())
        // Only work that arrived wakes them: a look at far delayed work is not work.
        if self.state.fifo.count > queued { self.state.takeArmedWatchdogs().wake() }
    }

    /// The queue has stopped and is drained: runs the shutdown handlers once, outside the lock,
    /// on this (the worker) thread. Called and returns with the mutex held.
    ///
    /// - Returns: Whether handlers ran (the caller looks at the state again).
    func runShutdownHandlers() -> Bool {
        guard !self.state.shutdownHandlers.isFired else { return false }
        let handlers = self.state.takeShutdownHandlers()
        guard !handlers.isEmpty else { return false }
        self.unlockState()
        let reason = SchedulingError.shutDown(scheduler: self.label)
        for handler in handlers { handler(reason) }
        self.lockState()
        return true
    }

    /// Out of work right after running some, the worker watches for more for a few
    /// microseconds before sleeping: on virtual machines a sleeping thread's CPU may be halted,
    /// and waking it costs tens of microseconds, while a hand-off that arrives during the
    /// watch costs one atomic store. The watch happens once per stretch of work (never while
    /// idle), so an idle queue still causes no wake-ups. Called and returns with the mutex held;
    /// the caller must look at the state again afterwards.
    @inline(never)
    func spinBeforeSleeping() {
        guard self.state.mayStartSpinning else { return }
        self.state.startSpinning()
        self.spinningWorkerNudged.store(false, ordering: .relaxed)
        // Delayed work falling due during the watch is work too: the watch ends then (a precise
        // timer due a few microseconds after the last work would otherwise wait out the window).
        let delayedDue = self.state.nextDelayedDeadline?.nanoseconds ?? .max
        self.openFastPathIfIdle()
        self.unlockState()
        let deadline = min(ClockReads.monotonicNanoseconds() &+ Self.spinWindowNanoseconds, delayedDue)
        var nudged = false
        while !nudged && ClockReads.monotonicNanoseconds() < deadline {
            nudged = self.spinningWorkerNudged.load(ordering: .acquiring)
        }
        self.lockState()
        self.state.stopSpinning()
    }

    /// Rings this much bigger than needed were given back: worth asking malloc to return the
    /// memory (about 1.5 MiB of slots), since large blocks freed by another thread's arena or
    /// below the heap's top are otherwise kept by the process.
    static let slotsWorthTrimming = 65_536

    /// Asks malloc to give free memory back to the system, with the lock released (it walks
    /// every arena). Only after a burst, on the way to sleep.
    @inline(never)
    private func returnFreedMemory() {
        self.unlockState()
        MallocTrim.returnFreeMemory()
        self.lockState()
    }

    /// The worker's only sleep, under one stable name that profiles can subtract.
    /// Called and returns with the mutex held.
    @inline(never)
    func blockingWaitForWork() {
        self.state.fallAsleep()
        self.openFastPathIfIdle()
        self.state.checkInvariants()
        if let deadline = self.state.nextDelayedDeadline, !self.state.isSuspended {
            self.workAvailable!.wait(releasing: self.mutex, until: deadline)
        } else {
            self.workAvailable!.wait(releasing: self.mutex)
        }
        self.closeFastPath()
        self.state.wakeUp()
    }

    /// Runs a batch outside the lock. Each closure is released right after it ran, outside the lock.
    ///
    /// - Returns: Whether a pooled queue was handed to a `sync` caller (the turn is over).
    @discardableResult
    func run(_ batch: inout RingBuffer<QueueWork>) -> Bool {
        while let work = batch.popFirst() {
            if self.interrupted.load(ordering: .relaxed) {
                batch.prepend(work)
                self.returnUnrun(&batch)
                return false
            }
            #if SERIAL_SIMULATION
            if case .syncTurn = work {} else { self.simulationBodies += 1 }  // a sync body counts itself
            #endif
            switch work {
            case .closure(let work):
                work()
            case .job(let job):
                // Isolated to this queue and to no task executor, as a default actor's job runs:
                // a call into another actor on this queue then needs no hop (see +Executor).
                job.runSynchronously(on: UnownedSerialExecutor(ordinary: self))
            case .taskJob(let job, let queue):
                // On the queue the task prefers (retained by the task), isolated to nothing.
                job.runSynchronously(on: UnownedTaskExecutor(ordinary: queue.takeUnretainedValue()))
            case .delayed(let handle):
                if let work = handle.claimRun() { work() }
            case .syncTurn(let waiter):
                // Counted as it starts: the caller may read the figures as soon as its body returns.
                self.progress.itemRan()
                if self.pool != nil {
                    self.handOffReleasingThePoolThread(to: waiter.takeUnretainedValue(), rest: &batch)
                    return true
                }
                self.handOff(to: waiter.takeUnretainedValue())
                continue
            }
            #if SERIAL_SIMULATION
            self.simulationBodies -= 1
            #endif
            self.progress.itemRan()
        }
        return false
    }

    /// Suspension or a cancelling shutdown arrived mid-batch: the rest goes back to the front.
    @inline(never)
    private func returnUnrun(_ rest: inout RingBuffer<QueueWork>) {
        self.lockState()
        self.interrupted.store(false, ordering: .relaxed)
        self.state.returnUnrun(&rest)
        let dropped = self.state.lifecycle == .shutDown(.cancelPending) ? self.state.removeCancellableWork() : []
        self.unlockState()
        self.discard(dropped)
    }

    /// Releases dropped work and cancels dropped delayed work, outside the lock (closures'
    /// captures may call back into this queue when released), then counts the delayed work
    /// whose run this prevented.
    func discard(_ dropped: [QueueWork], delayed: [DelayedHeap.Entry] = []) {
        var prevented = 0
        for entry in delayed where entry.handle.cancel() { prevented += 1 }
        for case .delayed(let handle) in dropped where handle.cancel() { prevented += 1 }
        guard prevented > 0 else { return }
        self.mutex.withLock { self.state.countCancelledDelayedWork(prevented) }
    }

    /// Gives the queue to a waiting `sync` caller and sleeps until its body returns.
    private func handOff(to waiter: CurrentQueueStack) {
        self.lockState()
        self.state.handOffToSyncCaller(thread: waiter.systemThreadID)
        waiter.grantTurn()
        // Signalled under the lock: the waiter's condition lives only as long as its thread,
        // and the waiter cannot return before it has reacquired this mutex.
        waiter.turnGranted.signal()
        while self.state.owner == .syncCaller {
            self.workAvailable!.wait(releasing: self.mutex)
        }
        self.state.takeBackFromSyncCaller()
        self.unlockState()
    }
}
