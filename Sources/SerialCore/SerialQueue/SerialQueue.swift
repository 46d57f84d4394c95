/// A serial queue: one worker thread and one FIFO of work, in one total order.
///
/// Work submitted with `async` runs on the queue's worker thread. Work submitted with `sync`
/// runs on the *caller's* thread, at its turn in the same FIFO, while the worker waits. Every
/// piece of work, from any thread, runs in the order its call entered the queue, and never two
/// at a time.
///
/// ```swift
/// let queue = SerialQueue(label: "db")
/// queue.async { print("on the worker") }
/// let rows = queue.sync { 42 }          // on this thread, after the async work
/// ```
///
/// **Lifetime.** The queue starts its worker thread in `init`. When the last reference is
/// released, work already enqueued still runs, delayed work not yet due is cancelled, and the
/// release waits for the worker thread to finish (unless it happens on the worker itself,
/// which then exits on its own once the queue is drained). A released queue keeps no thread.
/// `shutdown(_:)` ends a queue explicitly.
///
/// - Invariant: at most one piece of the queue's work runs at any moment, on the worker or
///   on a `sync` caller's thread.
public final class SerialQueue: Sendable {
    /// The name given at creation; it names the worker thread (first 15 bytes) and every trap.
    public let label: String
    let core: QueueCore
    /// The queue's own worker thread; `nil` for a queue on a `WorkerPool`.
    let thread: WorkerThread?
    /// The pool whose threads run this queue's work (kept alive by the queue); `nil` when it has its own.
    let pool: WorkerPool?

    /// Creates a queue and starts its worker thread, named from `label` (Linux keeps 15 bytes;
    /// an empty label names it "SerialQueue").
    ///
    /// - Parameters:
    ///   - label: names the queue in traps and errors, and its worker thread.
    ///   - maximumQueued: the most `async` items that may wait for the worker (see `async` and
    ///     `tryAsync`); `Int.max`, the default, sets no bound.
    /// - Precondition: The system can start a thread (otherwise this traps, saying why; use
    ///   `make(label:maximumQueued:)` to get an error instead), and `maximumQueued` ≥ 1.
    public convenience init(label: String, maximumQueued: Int = .max) {
        do {
            try self.init(startingWorkerFor: label, maximumQueued: maximumQueued)
        } catch {
            Misuse.threadStartFailed(error)
        }
    }

    /// Creates a queue like `init(label:maximumQueued:)`, but reports a thread that cannot be
    /// started as an error instead of a trap: at RLIMIT_NPROC, the kernel's thread limit, or
    /// out of memory for a stack.
    ///
    /// - Throws: `SerialQueueError.threadStartFailed`, with `pthread_create`'s errno in words.
    public static func make(label: String, maximumQueued: Int = .max) throws(SerialQueueError) -> SerialQueue {
        try SerialQueue(startingWorkerFor: label, maximumQueued: maximumQueued)
    }

    private init(startingWorkerFor label: String, maximumQueued: Int) throws(SerialQueueError) {
        if maximumQueued < 1 { Misuse.invalidMaximumQueued(label: label, maximumQueued) }
        let core = QueueCore(label: label, maximumQueued: maximumQueued)
        do {
            // Started before every stored property is set: a failure here runs no deinit.
            self.thread = try WorkerThread(name: label, fallbackName: "SerialQueue") { core.workerMain() }
        } catch {
            throw SerialQueueError.threadStartFailed(label: label, errno: error.errno, reason: error.reason)
        }
        self.label = label
        self.core = core
        self.pool = nil
    }

    /// A queue that runs on `pool` (see `SerialQueue+Pooled.swift`).
    init(label: String, core: QueueCore, pool: WorkerPool) {
        self.label = label
        self.core = core
        self.thread = nil
        self.pool = pool
    }

    deinit {
        self.releaseWorker()
    }

    /// Enqueues `work` to run on the worker thread after all work that entered before it.
    ///
    /// **Threads.** Never runs `work` on the caller's thread; wakes the worker only if it sleeps.
    ///
    /// **A bound.** On a queue made with `maximumQueued`, a full queue makes the caller wait for
    /// room (work already running on this queue is admitted over the bound instead). A wait that
    /// closes a cycle of waits across threads (each waiting for room in, or a `sync` turn on, a
    /// queue another holds) traps, naming the cycle.
    ///
    /// - Complexity: O(1) amortised, no allocation beyond the closure's own context.
    /// - Precondition: The queue was not shut down; that traps, naming the queue (see `tryAsync`).
    @inline(__always)
    public func async(_ work: @escaping @Sendable () -> Void) {
        self.core.submit(.closure(WorkContext.bind(work)), bounded: true, operation: "async")
    }

    /// Enqueues `work` like `async`, but throws instead of trapping when the queue is shut down.
    ///
    /// - Throws: `SerialQueueError.shutDown` when the queue no longer accepts work; `work` is
    ///   then released without running.
    public func tryAsync(_ work: @escaping @Sendable () -> Void) throws(SerialQueueError) {
        switch self.core.trySubmit(.closure(WorkContext.bind(work)), bounded: true) {
        case .accepted: return
        case .shutDown: throw SerialQueueError.shutDown(label: self.label)
        case .full: throw SerialQueueError.full(label: self.label, limit: self.core.maximumQueued)
        }
    }

    /// Runs `body` on the calling thread at its turn in this queue's FIFO, returning its result.
    ///
    /// **Ordering.** `body` starts after all work that entered the queue before this call,
    /// from any thread, has finished, and before any work that enters after it. Nothing else
    /// of this queue runs while it runs.
    ///
    /// **Threads.** `body` runs on the caller's thread, never on the worker; `isCurrent` is
    /// `true` inside it. An idle queue is entered at once, without a thread hand-off, a lock or
    /// an allocation (one compare-and-swap in, one out); otherwise the caller sleeps on its own
    /// wake-up until the worker hands it the queue, and the worker resumes after `body` returns
    /// or throws. A `sync` body whose queue has another caller's turn next hands it the queue
    /// itself as it returns (unless the queue is suspended, or a dedicated worker still holds
    /// earlier work of its batch).
    ///
    /// - Complexity: O(1) to enter and leave, plus the wait for earlier work.
    /// - Precondition: Not called from work already running on this queue, directly or through
    ///   other queues' `sync` (that would deadlock, so it traps naming the chain); the queue was
    ///   not shut down.
    public func sync<T>(_ body: () throws -> T) rethrows -> T {
        let core = self.core
        return try CurrentQueueStack.withCurrent { stack in
            if stack.holds(core) {
                Misuse.reentrantSync(label: self.label, chain: stack.labels + [self.label])
            }
            let enteredThroughTheDoor = core.enterSync(stack)
            stack.push(core)
            #if SERIAL_SIMULATION
            core.simulationBodies += 1
            #endif
            defer {
                #if SERIAL_SIMULATION
                core.simulationBodies -= 1
                #endif
                stack.pop(core)
                core.leaveSync(enteredThroughTheDoor: enteredThroughTheDoor)
            }
            return try body()
        }
    }

    /// Whether the caller is running this queue's work: inside its async (or delayed, or
    /// executor) work on the worker, or inside one of its `sync` bodies on any thread.
    ///
    /// - Complexity: O(depth of nested `sync` calls on this thread).
    public var isCurrent: Bool { self.core.isCurrent }

    /// Traps unless `isCurrent`, naming the queue.
    public func preconditionIsCurrent() {
        if !self.isCurrent { Misuse.notIsolated(label: self.label) }
    }
}

extension SerialQueue: CustomStringConvertible {
    /// `SerialQueue("label")`, for logs and messages.
    public var description: String { "SerialQueue(\"\(self.label)\")" }
}
