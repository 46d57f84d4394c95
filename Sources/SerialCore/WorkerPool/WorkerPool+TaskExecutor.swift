/// A `WorkerPool` runs tasks too: as a `TaskExecutor`, its threads run the jobs of every task
/// that prefers it, in the same run queue as its serial queues' turns.
///
/// ```swift
/// let pool = WorkerPool(threads: 4)
/// let sum = await withTaskExecutorPreference(pool) {
///     await withTaskGroup(of: Int.self) { group in
///         for index in 0..<100 { group.addTask { index } }   // child tasks run on the pool too
///         return await group.reduce(0, +)
///     }
/// }
/// ```
///
/// **Work-conserving**, as for queues: a job goes to the pool's run queue and wakes an idle
/// thread unless a spinning one will look, so it never waits while a pool thread idles. Jobs are
/// not serial: several run at once, one per free thread. A task that prefers the pool and calls
/// into an actor on a pooled `SerialQueue` runs that actor's work on the queue's turn, as always.
///
/// - Precondition: tasks that prefer the pool end before its `shutdown()` returns; a job that
///   arrives after the pool has stopped (a task resumed later) traps, naming the pool.
extension WorkerPool: TaskExecutor {
    /// Runs `job` on one of the pool's threads, as soon as one is free.
    ///
    /// - Precondition: the pool's task jobs were not handed to another executor (one that wraps
    ///   the pool and runs its jobs here); a task that prefers the pool itself then traps.
    public func enqueue(_ job: consuming ExecutorJob) {
        if let owner = self.core.taskJobOwner { Misuse.poolTaskJobsHandedOver(label: self.label, owner: owner) }
        let job = UnownedJob(job)
        RuntimeCallback.run { self.core.enqueueJob(job) }
    }
}
