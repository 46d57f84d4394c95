// Swift-concurrency faces of SerialQueue.
//
// As a serial executor (actors) the identity is the queue's core, which the worker retains, so
// an actor job never refers to anything the worker could outlive. As a task executor the
// identity must be the SerialQueue itself: `Task(executorPreference:)` retains the executor it
// is given and later releases the identity `asUnownedTaskExecutor()` returns, so a different
// object there would leak the queue and over-release the core.

extension QueueCore: SerialExecutor, TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        self.submit(.job(UnownedJob(job)), bounded: false, operation: "enqueue (a job of an actor or task on it)")
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    func checkIsolated() {
        if !self.isCurrent { Misuse.notIsolated(label: self.label) }
    }

    func isIsolatingCurrentContext() -> Bool? {
        self.isCurrent
    }
}

extension SerialQueue: SerialExecutor, TaskExecutor {
    /// Enqueues a Swift concurrency job; it runs on the worker in FIFO order with all other work.
    ///
    /// - Complexity: O(1) amortised; no allocation for the job itself.
    public func enqueue(_ job: consuming ExecutorJob) {
        self.core.enqueue(job)
    }

    /// The executor actors use: `nonisolated var unownedExecutor: UnownedSerialExecutor { q.asUnownedSerialExecutor() }`.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        self.core.asUnownedSerialExecutor()
    }

    /// The task executor for `Task(executorPreference:)` and `withTaskExecutorPreference`: the
    /// queue itself (a task that prefers it keeps it alive).
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Passes inside async work and inside `sync` bodies alike; traps elsewhere, naming the queue.
    public func checkIsolated() {
        self.core.checkIsolated()
    }

    /// Whether the caller runs this queue's work (async work, or a `sync` body).
    public func isIsolatingCurrentContext() -> Bool? {
        self.core.isCurrent
    }

    /// Runs `body` on the queue and returns its result to the awaiting task, without blocking a
    /// cooperative thread: the task suspends until the worker has run `body`.
    ///
    /// `body` runs with the awaiting task's `WorkContext` in place, as `async` work runs with its
    /// submitter's: a trace is not lost across the hop.
    ///
    /// On a bounded queue (`maximumQueued`) that is full, `body` is admitted over the bound, as
    /// executor jobs are: waiting for room would block the caller's cooperative thread, and a
    /// few such waits stop every task of the process (a deadlock if the queue's work awaits one).
    ///
    /// - Throws: What `body` throws.
    /// - Precondition: The queue is not shut down (that traps, naming the queue).
    public func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            let work: @Sendable () -> Void = {
                continuation.resume(returning: Result { () throws(E) -> T in try body() })
            }
            // Captured here, in the awaiting task (its task-locals), as `async` does.
            self.core.submit(.closure(WorkContext.bind(work)), bounded: false, operation: "run")
        }
        return try result.get()
    }
}
