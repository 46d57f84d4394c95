import Synchronization

/// The engine of a `WorkerPool`: its threads, the run queue of runnable serial queues, and its
/// timer. Queue cores and pool threads retain it; the public `WorkerPool` only starts and stops it.
///
/// Locking: the pool's mutex is a leaf. A queue's mutex may be held while taking it (a `sync`
/// caller telling the pool it blocks), never the other way round: the pool never takes a queue's
/// mutex while it holds its own.
final class PoolCore: @unchecked Sendable {  // all mutable state is guarded by `mutex`
    /// The most items one turn takes from a queue, so one busy queue cannot hold a thread for long.
    static let batchLimit = 64
    /// A pooled queue's FIFO starts this small: many thousands of them may exist at once.
    static let initialQueueCapacity = 2
    /// How long a thread out of work watches the run queue before it sleeps (as a dedicated
    /// worker does): work arriving meanwhile costs an atomic load instead of a futex wake-up.
    static let spinWindowNanoseconds: UInt64 = 20_000

    let label: String
    let mutex = PthreadMutex()
    /// Broadcast when a thread leaves and when a queue detaches, for `shutdown` and release.
    let changed = PthreadCondition()
    // Guarded by `mutex`.
    @exclusivity(unchecked) private(set) var state: PoolState
    let timers: PoolTimers
    /// `state.runQueue.count`, stored under the lock, read without it by spinning threads.
    private let runnableHint = Atomic<Int>(0)

    init(label: String, width: Int) {
        self.label = label
        self.state = PoolState(width: width)
        self.timers = PoolTimers(label: label)
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

    /// A queue has work and no owner: it joins the run queue's tail, where every free thread can
    /// see it, and an idle thread is woken unless a spinning one will look (work conservation:
    /// the calling work may go on for long, so it is never counted on to run the queue later).
    func makeRunnable(_ core: QueueCore) {
        self.enqueue(core)
    }

    /// Adds a queue to the run queue's tail (`ahead`: its head), waking an idle thread if one is
    /// needed.
    func enqueue(_ core: QueueCore, ahead: Bool = false, callerWillDequeue: Bool = false) {
        self.mutex.lock()
        let worker = self.state.enqueue(core, ahead: ahead, callerWillDequeue: callerWillDequeue)
        self.runnableHint.store(self.state.runQueue.count, ordering: .releasing)
        self.mutex.unlock()
        // After unlocking: the worker is retained here, and it waits for `isWoken`, set above.
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
        self.mutex.lock()
        while true {
            if let core = self.state.dequeue() {
                self.runnableHint.store(self.state.runQueue.count, ordering: .relaxed)
                self.mutex.unlock()
                core.runPooledTurn(on: worker, stack: stack)
                ranSinceSpinning = true
                self.mutex.lock()
                continue
            }
            if self.state.retireIfSurplus() { break }
            if ranSinceSpinning {
                // Once per stretch of work, never while idle: an idle pool causes no wake-ups.
                ranSinceSpinning = false
                self.spinBeforeSleeping()
                continue  // look at the run queue again, under the lock
            }
            self.state.goIdle(worker)
            while !worker.isWoken {
                worker.wakeUp.wait(releasing: self.mutex)
            }
        }
        self.changed.broadcast()
        self.mutex.unlock()
        stack.poolWorker = nil
    }

    /// Watches the run queue without the lock for a few microseconds. Called and returns with
    /// the mutex held; the caller looks at the run queue again afterwards.
    private func spinBeforeSleeping() {
        self.state.startSpinning()
        self.mutex.unlock()
        let deadline = ClockReads.monotonicNanoseconds() &+ Self.spinWindowNanoseconds
        while self.runnableHint.load(ordering: .acquiring) == 0 && ClockReads.monotonicNanoseconds() < deadline {}
        self.mutex.lock()
        self.state.stopSpinning()
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
