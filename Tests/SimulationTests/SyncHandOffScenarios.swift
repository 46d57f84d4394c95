#if SERIAL_SIMULATION
@testable import SerialCore
import SerialRuntime
import SerialTesting

/// A `sync` body that returns while another caller's turn is next in the FIFO passes the queue
/// straight to that caller (`QueueState.passToNextSyncCaller`). The promise is the FIFO's,
/// whoever hands the turn over: "`sync` runs on the caller's thread at its turn in the same
/// FIFO", one body at a time, nothing while the queue is suspended, and every caller gets its
/// turn (a grant without its signal would leave one asleep: the simulator reports the deadlock).
enum SyncHandOffScenarios {
    /// Reads the clock (a scheduling point each) until `queue` has counted `waits` sync waits, or
    /// 5,000 reads; checks that it did.
    static func waitForSyncWaits(_ waits: Int, on queue: SerialQueue, _ who: String) {
        var reads = 0
        while queue.statistics.syncWaits < waits && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        Simulation.check(queue.statistics.syncWaits >= waits, "\(who) did not queue its turn within 5,000 clock reads")
    }

    /// Behind a `sync` body, in this order: caller B's turn, async item 2, caller C's turn. The
    /// body suspends the queue and returns; then this thread writes 0 and resumes it. Expected:
    /// 0, B, 2, C, one at a time.
    static func aReturningBodyPassesInFIFOOrder(pooled: Bool) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "sim-pass-pool") : nil
            let queue = pool.map { SerialQueue(label: "sim-pass", pool: $0) } ?? SerialQueue(label: "sim-pass")
            let callers = [SerialQueue(label: "sim-pass-b"), SerialQueue(label: "sim-pass-c")]
            let log = ScenarioLog()
            var executedBeforeLeaving = 0
            queue.sync {
                callers[0].async { queue.sync { log.body(1) } }
                Self.waitForSyncWaits(1, on: queue, "caller B")
                queue.async { log.body(2) }
                callers[1].async { queue.sync { log.body(3) } }
                Self.waitForSyncWaits(2, on: queue, "caller C")
                queue.suspend()
                executedBeforeLeaving = queue.statistics.executed
            }
            // A turn counts as it is handed over: none may have been, the queue being suspended.
            Simulation.check(
                queue.statistics.executed == executedBeforeLeaving,
                "a turn was handed over while the queue was suspended (pooled: \(pooled))")
            log.entries.append(0)
            queue.resume()
            for caller in callers { caller.sync {} }
            queue.sync {}
            Simulation.check(
                log.entries == [0, 1, 2, 3] && log.mostInBody == 1,
                "ran \(log.entries) (expected [0, 1, 2, 3]: 0 is the resume), \(log.mostInBody) at once (pooled: \(pooled))")
            pool?.shutdown()
        }
    }

    /// Caller B queues behind a `sync` body that then runs for 100 µs, longer than B watches
    /// for its turn (`CurrentQueueStack.turnWatchNanoseconds`), so B is asleep when the body
    /// returns and passes it the queue. Expected: B is woken and runs.
    static func aReturningBodyWakesTheCallerItPassesTo(pooled: Bool) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "sim-wake-pool") : nil
            let queue = pool.map { SerialQueue(label: "sim-wake", pool: $0) } ?? SerialQueue(label: "sim-wake")
            let caller = SerialQueue(label: "sim-wake-b")
            let log = ScenarioLog()
            queue.sync {
                caller.async { queue.sync { log.body(1) } }
                Self.waitForSyncWaits(1, on: queue, "caller B")
                PromiseScenarios.pause(.microseconds(100))
            }
            caller.sync {}
            Simulation.check(log.entries == [1], "ran \(log.entries) (expected [1], pooled: \(pooled))")
            pool?.shutdown()
        }
    }

    /// Dedicated: the worker's batch holds B's turn and async item 2; C's turn queues while B's
    /// body runs. B's return gives the queue back to the batch. Expected: B, 2, C.
    static let aReturningBodyLeavesTheWorkersBatchFirst: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-pass-batch")
        let callers = [SerialQueue(label: "sim-batch-b"), SerialQueue(label: "sim-batch-c")]
        let gate = Mailbox()
        let log = ScenarioLog()
        queue.async { gate.take() }  // holds the worker until B's turn and item 2 are queued
        callers[0].async {
            queue.sync {
                callers[1].async { queue.sync { log.body(3) } }
                Self.waitForSyncWaits(2, on: queue, "caller C")
                log.body(1)
            }
        }
        Self.waitForSyncWaits(1, on: queue, "caller B")
        queue.async { log.body(2) }
        gate.post()
        for caller in callers { caller.sync {} }
        queue.sync {}
        Simulation.check(
            log.entries == [1, 2, 3] && log.mostInBody == 1,
            "ran \(log.entries) (expected [1, 2, 3]), \(log.mostInBody) at once")
    }
}
#endif
