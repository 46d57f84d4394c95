/// One piece of work in a queue's FIFO, stored as concrete cases so an executor job or a
/// sync turn costs no closure allocation.
enum QueueWork {
    /// `async` work.
    case closure(@Sendable () -> Void)
    /// A job of an actor on this queue (the queue as its serial executor).
    case job(UnownedJob)
    /// A job of a task that prefers this queue as its task executor and is isolated to no actor.
    /// The task retains the queue it prefers, so the queue outlives the job.
    case taskJob(UnownedJob, Unmanaged<SerialQueue>)
    /// Delayed work that has fallen due; it still runs only if its handle can claim the run.
    case delayed(DelayedWork)
    /// A `sync` caller waiting for its turn on its own thread.
    case syncTurn(Unmanaged<CurrentQueueStack>)

    /// Whether shutting down with `.cancelPending` may drop this work. Jobs and sync turns
    /// cannot be dropped: a task would never resume, a caller would never wake.
    var isCancellable: Bool {
        switch self {
        case .closure, .delayed: return true
        case .job, .taskJob, .syncTurn: return false
        }
    }
}

/// The decisions of a `SerialQueue`, as a plain value with no threads: every method runs under
/// the queue's mutex, decides, and returns what the caller must do after unlocking. Every field
/// is written only here, by a method named after the transition it makes.
///
/// - Invariant: at most one owner runs the queue's work at a time (`owner`); the worker
///   sleeps only when it has nothing it may run; `wakePending` is set only while the worker
///   sleeps and a signal is on its way.
struct QueueState {
    /// Who is running the queue's work now.
    enum Owner: Equatable {
        case none
        case worker
        /// A `sync` caller, on its own thread.
        case syncCaller
    }

    /// What the worker thread is doing.
    enum WorkerPhase: Equatable {
        case running
        /// Out of work, watching for more for a few microseconds before sleeping.
        case spinning
        case sleeping
        /// The worker gave the queue to a `sync` caller and waits to get it back.
        case awaitingSyncReturn
        case exited
    }

    enum Lifecycle: Equatable {
        case accepting
        case shutDown(ShutdownMode)
        /// The last reference to the queue was released.
        case released
    }

    enum WakeAction: Equatable {
        case none
        /// Signal the worker's condition variable.
        case wakeWorker
        /// Set the flag the spinning worker watches (no system call).
        case nudgeSpinningWorker
    }

    /// Set by the initializers only: a default value here would be allocated, then thrown
    /// away by the pooled one, on every pooled queue's creation.
    private(set) var fifo: RingBuffer<QueueWork>
    private(set) var delayed = DelayedHeap()
    private(set) var owner = Owner.none
    private(set) var phase = WorkerPhase.running
    private(set) var wakePending = false
    private(set) var suspendCount = 0
    private(set) var lifecycle = Lifecycle.accepting
    /// Whether some thread has claimed joining (or detaching) the worker thread.
    private(set) var threadReclaimed = false
    /// Work dropped by `shutdown(.cancelPending)` or by release, for the shutdown report.
    private(set) var cancelledWork = 0
    private(set) var cancelledDelayedWork = 0
    /// What to tell once the queue has stopped and drained (`Scheduling.whenShutDown`).
    private(set) var shutdownHandlers = ShutdownHandlers()
    /// Producers waiting for room in a full bounded queue.
    private(set) var roomWaiters = 0
    /// Figures for `statistics` and the stall watchdog.
    private(set) var counters = QueueCounters()
    /// The sleeping stall watchdogs to wake when this idle queue gets work (see `StallWatchdog`).
    private(set) var armedWatchdogs = ArmedWatchdogs()
    /// The kernel id of the thread of the `sync` body that owns the queue, when it came through
    /// the lock (0 otherwise).
    private(set) var syncOwnerThread: Int32 = 0
    /// Cancelled entries are purged from the delayed heap once it grows past this.
    private var compactionThreshold = 64

    /// A dedicated queue's state: its worker starts running.
    init() {
        self.fifo = RingBuffer(initialCapacity: 256)
    }

    var isAccepting: Bool { self.lifecycle == .accepting }

    /// Suspension only holds while the queue accepts work: shutdown and release drain.
    var isSuspended: Bool { self.suspendCount > 0 && self.lifecycle == .accepting }

    /// Idle: nothing queued or running, the worker asleep with no wake-up on its way, and
    /// nothing (suspension, shutdown) that `sync` must wait for. Only then may `sync` enter
    /// without the lock.
    var isIdle: Bool {
        self.owner == .none && self.fifo.isEmpty && !self.isSuspended && self.isAccepting
            && (self.phase == .sleeping || self.phase == .spinning) && !self.wakePending
    }

    /// Whether `sync` may enter without the lock: idle, and no sleeping watchdog to wake (its
    /// wake-up must go through the lock).
    var mayOpenDoor: Bool { self.isIdle && self.armedWatchdogs.isEmpty }

    /// Whether the worker, out of work, should watch for more before sleeping.
    var mayStartSpinning: Bool {
        self.owner == .none && self.fifo.isEmpty && !self.isSuspended && self.isAccepting
    }

    var workerShouldExit: Bool { !self.isAccepting && self.fifo.isEmpty && self.owner == .none }

    var nextDelayedDeadline: MonotonicInstant? { self.delayed.first?.deadline }

    /// Wakes a sleeping worker when it has something to do, once per sleep.
    mutating func wakeWorkerIfNeeded() -> WakeAction {
        guard self.phase == .sleeping || self.phase == .spinning, !self.wakePending, self.owner == .none else {
            return .none
        }
        let hasWork = !self.fifo.isEmpty && !self.isSuspended
        guard hasWork || self.workerShouldExit else { return .none }
        if self.phase == .spinning { return .nudgeSpinningWorker }
        self.wakePending = true
        return .wakeWorker
    }

    /// Ends one suspension. A worker asleep while suspended waits without a deadline, so it
    /// must also be woken when only delayed work is pending, to re-arm its timed wait.
    mutating func resume() -> WakeAction {
        self.suspendCount -= 1
        guard !self.isSuspended, !self.delayed.isEmpty, self.phase == .sleeping, !self.wakePending else {
            return self.wakeWorkerIfNeeded()
        }
        self.wakePending = true
        return .wakeWorker
    }

    mutating func submit(_ work: QueueWork) -> WakeAction {
        self.fifo.append(work)
        self.counters.entered(depth: self.fifo.count, watched: !self.armedWatchdogs.isEmpty)
        defer { self.checkInvariants() }
        return self.wakeWorkerIfNeeded()
    }

    /// Adds delayed work and says whether the worker must re-arm its timed wait.
    mutating func schedule(_ handle: DelayedWork) -> WakeAction {
        guard self.insertDelayed(handle) else { return .none }
        self.wakePending = true
        return .wakeWorker
    }

    /// `schedule` for a pooled queue: returns the deadline to arm on the pool's timer when the
    /// queue sleeps and this is its new earliest (a turn only to arm it would wait in the run
    /// queue behind busy queues, and the work would fall due before it was armed). Suspended or
    /// not: due work enters the FIFO at its deadline (an item, which a watchdog sees waiting) and
    /// runs once the queue resumes.
    mutating func schedulePooled(_ handle: DelayedWork) -> MonotonicInstant? {
        self.insertDelayed(handle, armsWhileSuspended: true) ? self.nextDelayedDeadline : nil
    }

    /// Adds delayed work. Returns whether it is the new earliest deadline of a sleeping,
    /// unscheduled queue (whose timed wait must be re-armed), unsuspended unless
    /// `armsWhileSuspended` (a pooled queue's timer: a dedicated worker sleeps without a deadline
    /// while suspended).
    private mutating func insertDelayed(_ handle: DelayedWork, armsWhileSuspended: Bool = false) -> Bool {
        if self.delayed.count >= self.compactionThreshold {
            // Cancelled entries hold no closure, only their handle: purging them is bookkeeping.
            self.delayed.removeCancelled()
            self.compactionThreshold = max(64, 2 * self.delayed.count)
        }
        self.delayed.insert(handle)
        return self.delayed.first?.handle === handle && self.phase == .sleeping && !self.wakePending
            && (armsWhileSuspended || !self.isSuspended)
    }

    /// Moves delayed work due at `now` to the back of the FIFO, in deadline order, and drops
    /// cancelled entries from the front of the heap.
    mutating func moveDueDelayedWork(now: MonotonicInstant) {
        while let first = self.delayed.first {
            if first.handle.isCancelled {
                _ = self.delayed.popFirst()
            } else if first.deadline <= now {
                self.fifo.append(.delayed(self.delayed.popFirst()!.handle))
                self.counters.entered(depth: self.fifo.count, watched: !self.armedWatchdogs.isEmpty)
            } else {
                return
            }
        }
    }

    /// Takes the queue for a `sync` caller at once if nothing is queued or running.
    mutating func tryEnterSync(thread: Int32) -> Bool {
        guard self.owner == .none, self.fifo.isEmpty, !self.isSuspended else { return false }
        self.owner = .syncCaller
        self.syncOwnerThread = thread
        return true
    }

    /// A `sync` body has returned: the queue goes back to the worker (if it handed it over)
    /// or to whoever comes next.
    mutating func leaveSync() -> WakeAction {
        assert(self.owner == .syncCaller, "internal inconsistency: leaving sync while owner is \(self.owner)")
        self.counters.syncBodyLeft()
        if self.phase == .awaitingSyncReturn {
            // Straight back to the worker: the rest of its batch comes before anything newer.
            self.owner = .worker
            return .wakeWorker
        }
        self.owner = .none
        defer { self.checkInvariants() }
        return self.wakeWorkerIfNeeded()
    }

    /// A `sync` body is returning and the FIFO's next item is another caller's turn: the
    /// queue passes straight to that caller, as a worker reaching the turn would pass it, without
    /// a worker or a pool thread in between. Not while the queue is suspended, nor while a
    /// dedicated worker holds the rest of its batch (`pooled` is false and the worker awaits
    /// this body's return: that batch comes first). `progress`: the queue's progress count now.
    ///
    /// - Returns: The caller whose turn it is now (the leaving thread grants it, under the lock).
    mutating func passToNextSyncCaller(pooled: Bool, progress: Int) -> Unmanaged<CurrentQueueStack>? {
        assert(self.owner == .syncCaller, "internal inconsistency: leaving sync while owner is \(self.owner)")
        guard case .syncTurn(let waiter)? = self.fifo.first, !self.isSuspended,
            pooled || self.phase != .awaitingSyncReturn
        else { return nil }
        _ = self.fifo.popFirst()
        self.counters.syncBodyLeft()
        self.counters.batchTaken(1, remaining: self.fifo.count, progress: progress)
        self.syncOwnerThread = waiter.takeUnretainedValue().systemThreadID
        return waiter
    }

    /// Gives the worker everything queued, if it may run now, by swapping the FIFO with the
    /// worker's empty spare ring: O(1) under the lock however long the FIFO is, and no per-item
    /// copying. Work arriving meanwhile goes to the other ring, behind the batch, as its order
    /// requires (delayed work that falls due joins the back too).
    /// `progress`: the queue's progress count now (`QueueProgress`), for the stall watchdog.
    mutating func takeBatch(into batch: inout RingBuffer<QueueWork>, progress: Int) -> Bool {
        guard self.owner == .none, !self.isSuspended, !self.fifo.isEmpty else { return false }
        assert(batch.isEmpty, "internal inconsistency: the worker's spare ring is not empty")
        self.owner = .worker
        swap(&self.fifo, &batch)
        self.counters.batchTaken(batch.count, remaining: 0, progress: progress)
        self.checkInvariants()
        return true
    }

    /// Puts work the worker took but did not run back at the front, in its order.
    mutating func returnUnrun(_ rest: inout RingBuffer<QueueWork>) {
        let returned = rest.count
        while let item = rest.popLast() { self.fifo.prepend(item) }
        self.counters.returned(returned, depth: self.fifo.count)
    }

    /// A `sync` caller found the queue busy: its turn joins the FIFO.
    mutating func submitSyncTurn(_ waiter: Unmanaged<CurrentQueueStack>) -> WakeAction {
        self.counters.syncWaited()
        return self.submit(.syncTurn(waiter))
    }

    /// Drops what `.cancelPending` may drop from the FIFO, counting the closures; returns it all
    /// for `QueueCore.discard` to release and cancel outside the lock.
    mutating func removeCancellableWork() -> [QueueWork] {
        let oldestKept = self.fifo.first.map { !$0.isCancellable } ?? false
        let removed = self.fifo.removeAll { $0.isCancellable }
        for case .closure in removed { self.cancelledWork += 1 }
        self.counters.dropped(removed.count, remaining: self.fifo.count, oldestKept: oldestKept)
        return removed
    }
}

// MARK: The worker's transitions

extension QueueState {
    /// The worker finished a batch: nobody owns the queue until the next decision.
    mutating func finishBatch() {
        assert(self.owner == .worker, "internal inconsistency: a batch ended while owner is \(self.owner)")
        self.owner = .none
    }

    /// A lock holder closed the door on a `sync` body that came through it: that body owns the
    /// queue, and its leaving now goes through the lock.
    mutating func recordDoorEnteredSyncCaller() {
        self.owner = .syncCaller
        self.syncOwnerThread = 0  // the door does not say whose thread it is
    }

    /// The worker, out of work, starts watching for more before sleeping.
    mutating func startSpinning() {
        self.phase = .spinning
    }

    /// The worker stopped watching (nudged, or the window passed).
    mutating func stopSpinning() {
        self.phase = .running
    }

    /// The worker goes to sleep on its condition variable.
    mutating func fallAsleep() {
        self.phase = .sleeping
    }

    /// The worker woke up (signalled, timed out or spuriously): any signal on its way arrived.
    mutating func wakeUp() {
        self.phase = .running
        self.wakePending = false
    }

    /// The worker reached a `sync` caller's turn and hands it the queue.
    mutating func handOffToSyncCaller(thread: Int32) {
        self.owner = .syncCaller
        self.syncOwnerThread = thread
        self.phase = .awaitingSyncReturn
    }

    /// The `sync` body returned and the worker has the queue back.
    mutating func takeBackFromSyncCaller() {
        self.phase = .running
    }

    /// The worker left its loop for good.
    mutating func workerExited() {
        self.phase = .exited
    }

    /// The worker goes to sleep: give back what a burst made the FIFO grow to.
    mutating func shrinkFIFOIfOversized(floor: Int = 256) -> Int {
        self.fifo.shrinkIfOversized(forRecentCount: 0, floor: floor)
    }
}

// MARK: Pooled turns (see QueueCore+Pooled.swift)
//
// In pooled mode the same fields mean: `phase == .sleeping` with `wakePending` — the queue
// waits in its pool's run queue; `.sleeping` without — idle, on no pool thread; `.running` —
// a pool thread runs a turn; `.awaitingSyncReturn` — the turn handed the queue to a `sync`
// caller and its thread left. `owner == .worker` is the pool thread running the turn.

extension QueueState {
    /// A fresh idle pooled queue, whose FIFO starts with room for `initialCapacity` items
    /// (pooled queues start small: many of them may exist at once).
    init(pooledWithInitialCapacity initialCapacity: Int) {
        self.fifo = RingBuffer(initialCapacity: initialCapacity)
        self.phase = .sleeping  // no turn runs or is queued until work arrives
    }

    /// A pool thread starts a turn: the queue left the run queue, or a `sync` caller it was
    /// handed to has returned it.
    mutating func beginPooledTurn() {
        if self.phase == .awaitingSyncReturn {
            assert(self.owner == .worker, "internal inconsistency: a sync return without the queue: \(self)")
            self.phase = .running
            self.owner = .none
        } else {
            assert(self.wakePending, "internal inconsistency: a pooled turn began without being scheduled: \(self)")
            self.phase = .running
            self.wakePending = false
        }
    }

    /// Whether a pooled turn could take a batch now.
    var hasRunnableWork: Bool { self.owner == .none && !self.isSuspended && !self.fifo.isEmpty }

    /// Like `takeBatch(into:)`, but moves at most `limit` items from the front of the FIFO, so
    /// one busy queue cannot hold a pool thread for long.
    mutating func takeBatch(into batch: inout RingBuffer<QueueWork>, limit: Int, progress: Int) -> Bool {
        guard self.owner == .none, !self.isSuspended, !self.fifo.isEmpty else { return false }
        assert(batch.isEmpty, "internal inconsistency: the pool thread's batch ring is not empty")
        self.owner = .worker
        self.fifo.moveFirst(limit, appendingTo: &batch)
        self.counters.batchTaken(batch.count, remaining: self.fifo.count, progress: progress)
        self.checkInvariants()
        return true
    }

    /// The turn ends with work left: the queue goes back to the tail of the pool's run queue.
    mutating func requeuePooledTurn() {
        assert(self.hasRunnableWork, "internal inconsistency: requeued with nothing to run: \(self)")
        self.phase = .sleeping
        self.wakePending = true
    }
}

// MARK: The stall watchdog

extension QueueState {
    /// A watchdog going to sleep asks to be woken when this queue gets work.
    mutating func armWatchdog(_ watchdog: StallWatchdog.Core) {
        self.armedWatchdogs.arm(watchdog)
    }

    /// A watchdog stopped watching this queue: disarms it alone (others stay armed), returning
    /// it if it was armed, for the caller to release after unlocking.
    mutating func disarmWatchdog(_ watchdog: StallWatchdog.Core) -> StallWatchdog.Core? {
        self.armedWatchdogs.disarm(watchdog)
    }

    /// A watchdog's look: stamps the current wait and batch if they are untimed (see
    /// `QueueCounters`), with the clock read only then.
    mutating func stampUntimedWaits(waitingInBatch: Int) {
        self.counters.stampUntimedWaits(fifoIsEmpty: self.fifo.isEmpty, waitingInBatch: waitingInBatch) {
            ClockReads.monotonicNanoseconds()
        }
    }

    /// The queue got work: takes every armed watchdog, for the caller to wake after unlocking.
    @inline(__always)
    mutating func takeArmedWatchdogs() -> ArmedWatchdogs {
        self.armedWatchdogs.takeAll()
    }
}

// MARK: Producers, suspension, lifecycle

extension QueueState {
    /// A producer starts waiting for room in a full bounded queue.
    mutating func beginWaitingForRoom() {
        self.roomWaiters += 1
    }

    /// A producer stops waiting for room (it has room, or the queue stopped accepting).
    mutating func endWaitingForRoom() {
        self.roomWaiters -= 1
    }

    /// One more `suspend()`.
    mutating func suspend() {
        self.suspendCount += 1
    }

    /// What `shutdown` must do after unlocking.
    struct ShutdownAction {
        var wake: WakeAction
        var dropped: [QueueWork]
        var cancelledDelayed: [DelayedHeap.Entry]
        var wakeRoomWaiters: Bool
    }

    /// Stops accepting work: delayed work is cancelled and, with `.cancelPending`, what may be
    /// dropped from the FIFO is. `nil` when the queue had already stopped.
    mutating func shutDown(_ mode: ShutdownMode) -> ShutdownAction? {
        guard self.isAccepting else { return nil }
        self.lifecycle = .shutDown(mode)
        let cancelledDelayed = self.delayed.removeAll()
        let dropped = mode == .cancelPending ? self.removeCancellableWork() : []
        return ShutdownAction(
            wake: self.wakeWorkerIfNeeded(), dropped: dropped, cancelledDelayed: cancelledDelayed,
            wakeRoomWaiters: self.roomWaiters > 0)
    }

    /// The last reference is gone: stop accepting (if still accepting), cancelling delayed work.
    mutating func release() -> (wake: WakeAction, cancelledDelayed: [DelayedHeap.Entry]) {
        var cancelledDelayed: [DelayedHeap.Entry] = []
        if self.isAccepting {
            self.lifecycle = .released
            cancelledDelayed = self.delayed.removeAll()
        }
        return (self.wakeWorkerIfNeeded(), cancelledDelayed)
    }

    /// Claims joining (or detaching) the worker thread: `true` for the first caller only.
    mutating func claimThread() -> Bool {
        defer { self.threadReclaimed = true }
        return !self.threadReclaimed
    }

    /// Counts delayed work whose run a shutdown or release prevented.
    mutating func countCancelledDelayedWork(_ count: Int) {
        self.cancelledDelayedWork += count
    }

    /// Keeps a handler for the shutdown; `nil` when it has happened (run it at once).
    mutating func addShutdownHandler(_ handler: @escaping ShutdownHandlers.Handler) -> UInt64? {
        self.shutdownHandlers.add(handler)
    }

    /// Withdraws a handler, returning it to be released outside the lock.
    mutating func removeShutdownHandler(_ id: UInt64) -> ShutdownHandlers.Handler? {
        self.shutdownHandlers.remove(id)
    }

    /// The queue has stopped and drained: takes every handler, once.
    mutating func takeShutdownHandlers() -> [ShutdownHandlers.Handler] {
        self.shutdownHandlers.takeAll()
    }
}

extension QueueState {
    /// The O(1) invariants, checked after the decisions that change them (debug builds).
    func checkInvariants() {
        assert(!self.wakePending || self.phase == .sleeping, "internal inconsistency: wake pending while \(self)")
        assert(
            self.phase != .awaitingSyncReturn || self.owner != .none,
            "internal inconsistency: worker awaits a sync return but nobody owns the queue: \(self)")
        assert(self.phase != .exited || (self.fifo.isEmpty && !self.isAccepting), "internal inconsistency: \(self)")
        assert(self.suspendCount >= 0, "internal inconsistency: negative suspend count: \(self)")
        assert(
            !(self.phase == .sleeping && self.owner == .none && !self.fifo.isEmpty && !self.isSuspended
                && !self.wakePending),
            "internal inconsistency: work queued for a sleeping worker that nobody is waking: \(self)")
    }
}

extension QueueState: CustomStringConvertible {
    var description: String {
        "QueueState(owner: \(self.owner), phase: \(self.phase), wakePending: \(self.wakePending), "
            + "fifo: \(self.fifo.count), delayed: \(self.delayed.count), suspendCount: \(self.suspendCount), "
            + "lifecycle: \(self.lifecycle))"
    }
}
