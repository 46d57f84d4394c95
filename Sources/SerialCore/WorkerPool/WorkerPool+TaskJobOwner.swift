/// Hooks for an executor that wraps a `WorkerPool` and runs its task jobs on the pool's threads
/// under its own identity (SerialExperimentalExecutors' `WheelTaskExecutor`).
///
/// The runtime must see one identity per task: the executor a task was told to prefer is the one
/// its jobs run on. So a wrapper takes the pool's task jobs over for good: from then on every job
/// runs as the wrapper, and a task that prefers the bare pool traps, naming the wrapper.
extension WorkerPool {
    /// Makes `executor` the task executor every later job of this pool runs as, and turns away
    /// jobs of tasks that prefer the pool itself (`ownerDescription` names the owner in that trap).
    ///
    /// - Precondition: called once, before any task can prefer the pool or `executor`.
    package func handOverTaskJobs(to executor: UnownedTaskExecutor, ownerDescription: String) {
        self.core.taskJobOwner = ownerDescription
        self.core.taskExecutor = executor
    }

    /// Runs `job` on one of the pool's threads, as the executor the jobs were handed over to:
    /// the same run queue and work conservation as `enqueue(_:)`.
    package func enqueueHandedOverJob(_ job: UnownedJob) {
        self.core.enqueueJob(job)
    }
}
