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
    let thread: WorkerThread

    /// Creates a queue and starts its worker thread, named from `label` (Linux keeps 15 bytes).
    public init(label: String) {
        self.label = label
        let core = QueueCore(label: label)
        self.core = core
        self.thread = WorkerThread(name: label) { core.workerMain() }
    }

    deinit {
        self.releaseWorker()
    }

    /// Enqueues `work` to run on the worker thread after all work that entered before it.
    ///
    /// **Threads.** Never runs `work` on the caller's thread; wakes the worker only if it sleeps.
    ///
    /// - Complexity: O(1) amortised, no allocation beyond the closure's own context.
    /// - Precondition: The queue was not shut down; that traps, naming the queue (see `tryAsync`).
    @inline(__always)
    public func async(_ work: @escaping @Sendable () -> Void) {
        self.core.submit(.closure(work), operation: "async")
    }

    /// Enqueues `work` like `async`, but throws instead of trapping when the queue is shut down.
    ///
    /// - Throws: `SerialQueueError.shutDown` when the queue no longer accepts work; `work` is
    ///   then released without running.
    public func tryAsync(_ work: @escaping @Sendable () -> Void) throws(SerialQueueError) {
        guard self.core.trySubmit(.closure(work)) else { throw SerialQueueError.shutDown(label: self.label) }
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
    /// or throws.
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
            defer {
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
