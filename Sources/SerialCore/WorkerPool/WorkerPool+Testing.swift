// Test hooks: package-only views of a pool's insides.

extension WorkerPool {
    /// How many queues and task jobs wait in the run queue for a pool thread.
    package var _runQueueCount: Int {
        self.core.mutex.withLock { self.core.state.runQueue.count }
    }

    /// How many pool threads sleep idle (not watching: asleep until woken).
    package var _idleThreadCount: Int {
        self.core.mutex.withLock { self.core.state.idleWorkers.count }
    }

    /// How many pool threads doze (idle for `PoolCore.dozeNanoseconds` after a watch that saw only
    /// turnover, then they watch again).
    package var _dozingThreadCount: Int {
        self.core.mutex.withLock { self.core.state.dozingCount }
    }

    /// Whether `queue` waits in the pool's run queue for a thread.
    package func _runQueueHolds(_ queue: SerialQueue) -> Bool {
        self.core.mutex.withLock {
            self.core.state.runQueue.contains { runnable in
                if case .queue(let core) = runnable { return core === queue.core }
                return false
            }
        }
    }
}

#if SERIAL_LOCK_STATISTICS
/// What the pool's mutex cost over some work (a build instrumented with `SERIAL_LOCK_STATISTICS`).
package struct PoolLockStatistics: Sendable {
    /// Turns of pooled queues and task jobs run.
    package var turns: Int
    package var jobs: Int
    /// Acquisitions of the pool's mutex, those that found it held, and the time it was held.
    package var acquisitions: Int
    package var contended: Int
    package var heldNanoseconds: UInt64
}

extension WorkerPool {
    /// The pool mutex's statistics since the last reset.
    package var _lockStatistics: PoolLockStatistics {
        self.core.mutex.withLock {
            let mutex = self.core.mutex.statistics
            return PoolLockStatistics(
                turns: self.core.turnsRun.load(ordering: .relaxed), jobs: self.core.jobsRun.load(ordering: .relaxed),
                acquisitions: mutex.acquisitions, contended: mutex.contended, heldNanoseconds: mutex.heldNanoseconds)
        }
    }

    /// Counts from zero again.
    package func _resetLockStatistics() {
        self.core.mutex.withLock {
            self.core.mutex.statistics.reset()
            self.core.turnsRun.store(0, ordering: .relaxed)
            self.core.jobsRun.store(0, ordering: .relaxed)
        }
    }
}
#endif
