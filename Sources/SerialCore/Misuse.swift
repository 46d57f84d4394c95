/// Every programmer-error trap of this library, with the words crash tests match.
///
/// A message names the object, the rule that was broken, and the way out.
package enum Misuse {
    @inline(never)
    package static func reentrantSync(label: String, chain: [String]) -> Never {
        fatalError("""
            SerialQueue "\(label)": sync called from work already running on it \
            (this thread holds \(chain.map { "\"\($0)\"" }.joined(separator: " → "))); it would deadlock. \
            Call the body directly, or use async.
            """)
    }

    @inline(never)
    package static func overResume(label: String) -> Never {
        fatalError("""
            SerialQueue "\(label)": resume() called more often than suspend(); \
            every resume must match an earlier suspend.
            """)
    }

    @inline(never)
    package static func useAfterShutdown(label: String, operation: String) -> Never {
        fatalError("""
            SerialQueue "\(label)": \(operation) after shutdown; the work was rejected, not run. \
            Submit work before calling shutdown(), or use tryAsync to get an error instead of a trap.
            """)
    }

    @inline(never)
    package static func releasedWhileSuspended(label: String, count: Int) -> Never {
        fatalError("""
            SerialQueue "\(label)": last reference released while suspended (suspend count \(count)); \
            its pending work could never run. Resume it, or call shutdown(.cancelPending), before releasing it.
            """)
    }

    @inline(never)
    package static func threadStartFailed(_ error: SerialQueueError) -> Never {
        fatalError("\(error). Use SerialQueue.make(label:) to get this as an error instead of a trap.")
    }

    @inline(never)
    package static func waitDeadlock(operation: String, cycle: String) -> Never {
        fatalError("""
            \(operation) would deadlock: \(cycle). Each thread waits for a queue the next one holds. \
            Make one of these calls async (tryAsync on a bounded queue, which throws when it is full), \
            or take the queues in one fixed order everywhere.
            """)
    }

    @inline(never)
    package static func invalidMaximumQueued(label: String, _ value: Int) -> Never {
        fatalError("""
            SerialQueue "\(label)": maximumQueued \(value) must be at least 1. \
            Pass Int.max for no bound.
            """)
    }

    @inline(never)
    package static func notIsolated(label: String) -> Never {
        fatalError("""
            SerialQueue "\(label)": checkIsolated failed: the caller is not running on this queue \
            (neither in its async work nor inside one of its sync bodies).
            """)
    }
}

extension Misuse {
    @inline(never)
    package static func invalidPoolWidth(label: String, _ value: Int) -> Never {
        fatalError("""
            WorkerPool "\(label)": threads must be at least 1, got \(value). \
            Pass a positive count, or leave the default (the number of processors).
            """)
    }

    @inline(never)
    package static func poolTaskJobsHandedOver(label: String, owner: String) -> Never {
        fatalError("""
            WorkerPool "\(label)": a task that prefers this pool was started, but the pool runs the task jobs \
            of \(owner), which wraps it. Prefer that executor instead (withTaskExecutorPreference, \
            Task(executorPreference:)); queues created on the pool are unaffected.
            """)
    }

    @inline(never)
    package static func poolJobAfterShutdown(label: String) -> Never {
        fatalError("""
            WorkerPool "\(label)": a task job arrived after the pool stopped, so no thread is left to run it. \
            Tasks that prefer a pool (withTaskExecutorPreference, Task(executorPreference:)) must end before \
            its shutdown() returns.
            """)
    }

    @inline(never)
    package static func poolShutdownFromItsOwnThread(label: String) -> Never {
        fatalError("""
            WorkerPool "\(label)": shutdown() called from work running on one of its own threads; \
            it would wait for itself. Call it from a thread outside the pool.
            """)
    }

    @inline(never)
    package static func poolShutdownInsideItsQueue(label: String, queue: String) -> Never {
        fatalError("""
            WorkerPool "\(label)": shutdown() called inside a sync body of its queue "\(queue)";             it would wait for that queue to exit, which cannot happen before the body returns.             Call it after the body returns, or from a thread that runs none of the pool's queues.
            """)
    }
}

extension Misuse {
    @inline(never)
    package static func poolStartFailed(_ error: SerialQueueError) -> Never {
        fatalError("\(error). Use WorkerPool.make(threads:label:) to get this as an error instead of a trap.")
    }

    @inline(never)
    package static func queueOnShutDownPool(_ error: SerialQueueError) -> Never {
        fatalError("\(error). Use SerialQueue.make(label:pool:) to get this as an error instead of a trap.")
    }
}
