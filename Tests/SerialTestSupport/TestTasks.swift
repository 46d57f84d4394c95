import SerialCore

/// An executor for the tasks a test starts and then waits for with a bound.
///
/// A task started on the cooperative pool queues behind every job enqueued before it; at the
/// start of a run Swift Testing enqueues hundreds of tests on two threads, and under a
/// sanitizer and a busy machine a new task did not start within 120 s. On this pool a test's own
/// tasks start at once, whatever the other suites do: `Task(executorPreference: TestTasks.executor)`.
public enum TestTasks {
    /// Two threads of their own, for the life of the process.
    public static let executor = WorkerPool(threads: 2, label: "test-tasks")
}
