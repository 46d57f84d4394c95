// Test hooks: package-only views of a pool's insides.

extension WorkerPool {
    /// How many queues and task jobs wait in the run queue for a pool thread.
    package var _runQueueCount: Int {
        self.core.mutex.withLock { self.core.state.runQueue.count }
    }
}
