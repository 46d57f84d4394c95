// Swift-concurrency faces of SerialQueue.
//
// As a serial executor (actors) the identity is the queue's core, which the worker retains, so
// an actor job never refers to anything the worker could outlive. As a task executor the
// identity must be the SerialQueue itself: `Task(executorPreference:)` retains the executor it
// is given and later releases the identity `asUnownedTaskExecutor()` returns, so a different
// object there would leak the queue and over-release the core.
//
// The two faces keep their jobs apart (`QueueWork.job`, `.taskJob`) because the runtime decides
// whether an `await` needs a hop by comparing the executors a job was run with to the ones the
// task needs next: the serial executor's identity, then the task executor's. An actor job runs
// isolated to the core with no task executor, as a default actor's does, so a task that prefers
// none calls into another actor on this queue, and returns from it, without leaving the thread
// (`swift_task_switch` finds nothing to switch). A task-executor job runs on the queue as the
// task's own task executor and isolated to nothing, so the task's nonisolated calls stay on the
// thread too. Running every job isolated to the core *and* on the core as task executor, as
// this file once did, matched no task's preference: every such `await` went through the FIFO
// twice (there and back; `SerialQueueActorHopTests`).
//
// What the runtime cannot do is switch inline *to* a custom executor: a call into an actor on
// another SerialQueue (or from a task that prefers some task executor into any actor on one) is
// always enqueued there. See the "Actor hops" article for the figures.

extension QueueCore: SerialExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        RuntimeCallback.run { self.submit(.job(job), bounded: false, operation: "enqueue (a job of an actor on it)") }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
        if !self.isCurrent { Misuse.notIsolated(label: self.label) }
    }

    func isIsolatingCurrentContext() -> Bool? {
        self.isCurrent
    }
}

extension SerialQueue: SerialExecutor, TaskExecutor {
    /// Enqueues a job of a task that prefers this queue (`Task(executorPreference:)`,
    /// `withTaskExecutorPreference`); it runs on the worker in FIFO order with all other work.
    ///
    /// Jobs of actors on the queue do not come here: their executor is the one
    /// `asUnownedSerialExecutor()` returns. The job runs with this queue as its task executor and
    /// no actor isolation, so the task's calls to nonisolated async functions stay on the queue's
    /// thread without another trip through the FIFO.
    ///
    /// - Complexity: O(1) amortised; no allocation for the job itself.
    public func enqueue(_ job: consuming ExecutorJob) {
        let core = self.core  // read before the job is taken: the same instructions as before the wrapper
        let job = UnownedJob(job)
        RuntimeCallback.run {
            core.submit(
                .taskJob(job, Unmanaged.passUnretained(self)), bounded: false,
                operation: "enqueue (a job of a task that prefers it)")
        }
    }

    /// The executor actors use: `nonisolated var unownedExecutor: UnownedSerialExecutor { q.asUnownedSerialExecutor() }`.
    ///
    /// A call from one actor on this queue into another actor on it runs inline, with no trip
    /// through the FIFO (unless the calling task prefers a task executor: the runtime then hops).
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
