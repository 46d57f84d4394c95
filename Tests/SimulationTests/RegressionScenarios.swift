#if SERIAL_SIMULATION
@testable import SerialCore
import SerialRuntime
import SerialTesting

/// A value the scenario's work shares. Unlocked on purpose, like `ScenarioLog`: one simulated
/// thread runs at a time and each hand-off orders memory.
final class ScenarioBox<Value>: @unchecked Sendable {  // simulated threads only, one at a time
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Scenarios for bugs this runtime really had. Each passes on today's code under every schedule
/// and fails on its mutant (`Verification/simulation-mutants/`): that is how we know it checks
/// what it names. Random scheduling only: each waits in a loop that reads the clock for another
/// thread's step, which strict priorities (PCT) may starve until the loop's bound.
enum RegressionScenarios {
    /// Work posted from a pool thread's turn while the other pool thread is free runs on that
    /// thread, not after the turn (`private-next`: the pool's first, private `next` slot). The
    /// pool's work-conservation invariant fails at the step a queue waits while a thread idles.
    static let workPostedFromATurnRunsOnAFreeThread: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 2, label: "sim-wc")
        let a = SerialQueue(label: "sim-wc-a", pool: pool)
        let b = SerialQueue(label: "sim-wc-b", pool: pool)
        let ran = ScenarioBox(false)
        a.async {
            b.async { ran.value = true }
            // a's work goes on: b must not wait for it while the other thread is free.
            var reads = 0
            while !ran.value && reads < 2_000 {
                _ = MonotonicInstant.now()
                reads += 1
            }
            Simulation.check(ran.value, "b's work waited \(reads) clock reads for a's turn while a thread was free")
        }
        a.sync {}
        b.sync {}
    }

    /// Work a turn queues behind its `next` slot (in its thread's own run queue) runs on the other
    /// pool thread once that one is free, while the turn goes on (`local-not-stolen`: a free
    /// thread does not look at other threads' own run queues). A push that does not read
    /// `freeCount` again was not found here in 1,000 schedules: a thread that frees up after a
    /// turn watches, then looks again, which hides it; `Verification/pool.pml` checks that one.
    static let workQueuedBehindNextRunsOnAFreeThread: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 2, label: "sim-local")
        let a = SerialQueue(label: "sim-local-a", pool: pool)
        let b = SerialQueue(label: "sim-local-b", pool: pool)
        let c = SerialQueue(label: "sim-local-c", pool: pool)
        let x = SerialQueue(label: "sim-local-x", pool: pool)
        let ranB = ScenarioBox(false)
        let ranC = ScenarioBox(false)
        x.async {
            for _ in 0..<20 { _ = MonotonicInstant.now() }  // holds the other thread for a while
        }
        a.async {
            b.async { ranB.value = true }  // `next`, while the other thread is busy
            c.async { ranC.value = true }  // then this thread's own run queue
            var reads = 0
            while !(ranB.value && ranC.value) && reads < 2_000 {
                _ = MonotonicInstant.now()
                reads += 1
            }
            Simulation.check(
                ranB.value && ranC.value,
                "b ran: \(ranB.value), c ran: \(ranC.value) after \(reads) clock reads of a's turn while a thread was free")
        }
        a.sync {}
        b.sync {}
        c.sync {}
        x.sync {}
    }

    /// A queue's worker that fell asleep is woken by the next `async` and `sync` (`lost-wakeup`:
    /// a producer that skips the signal to a sleeping worker; the run then deadlocks).
    static let asyncThenSync = Scenarios.asyncThenSync

    /// Releasing a dedicated queue on a pool thread lets its draining work wait for the pool
    /// (`release-without-blocking`: the release joins the worker without the blocking wrapper,
    /// so the one pool thread waits for work that only a pool thread can run: a deadlock).
    static let releasingADedicatedQueueOnAPoolThread: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 1, label: "sim-blk")
        let a = SerialQueue(label: "sim-blk-a", pool: pool)
        let b = SerialQueue(label: "sim-blk-b", pool: pool)
        let log = ScenarioLog()
        a.async {
            b.async {}  // b is runnable: only a pool thread can run it
            do {
                let d = SerialQueue(label: "sim-blk-d")
                d.async { b.sync { log.entries.append(1) } }
            }  // released here: the release joins d's worker, whose work waits for b's turn
            log.entries.append(2)
        }
        a.sync {}
        Simulation.check(log.entries == [1, 2], "ran \(log.entries)")
    }

    /// A `stopWatching` while the watchdog looks leaves the queue unarmed once the look ends
    /// (`watchdog-rearm`: the look arms the queue after `stopWatching` disarmed it).
    static let stopWatchingDuringALook: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-watched")
        let watchdog = StallWatchdog(checkInterval: .microseconds(200)) { _ in }
        watchdog.watch(queue)
        waitForFirstLook(of: watchdog)
        watchdog.stopWatching(queue)
        watchdog.stop()  // joins the watchdog's thread: its look has ended
        Simulation.check(!queue._isArmed(for: watchdog), "the queue is still armed for a watchdog that stopped watching it")
    }

    /// Delayed work that falls due while a pool thread runs a chain of `next`-slot hops runs
    /// after the current turn, not after the chain (`due-behind-hops`: the chain ends only at
    /// `consecutiveHopLimit`). One pool thread; a and b hand one item to each other 80 times.
    static let dueWorkEndsAChainOfHops: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 1, label: "sim-due")
        let a = SerialQueue(label: "sim-due-a", pool: pool)
        let b = SerialQueue(label: "sim-due-b", pool: pool)
        let due = SerialQueue(label: "sim-due-c", pool: pool)
        let hops = ScenarioBox(0)
        let dueRanAfter = ScenarioBox<Int?>(nil)
        let done = Mailbox()
        _ = due.asyncAfter(delay: .microseconds(50)) { dueRanAfter.value = hops.value }
        @Sendable func hop(_ index: Int) {
            hops.value += 1
            if index == 0 {
                // Hold the chain's first turn until the due queue waits in the run queue.
                var reads = 0
                while pool._runQueueCount == 0 && reads < 5_000 {
                    _ = MonotonicInstant.now()
                    reads += 1
                }
            }
            guard index < 80 else { return done.post() }
            (index % 2 == 0 ? b : a).async { hop(index + 1) }
        }
        a.async { hop(0) }
        done.take()
        due.sync {}
        Simulation.check(
            (dueRanAfter.value ?? .max) <= 2,
            "due delayed work ran after \(dueRanAfter.value.map(String.init) ?? "no") hops of the chain, "
                + "not after the turn")
    }

    /// A `sync` turn with async work behind it in the same batch: the worker hands the queue to
    /// the caller and runs the work behind only once the body has returned. (A worker that does
    /// not wait for the body trips `finishBatch`'s debug assertion on most schedules before the
    /// one-body invariant sees the overlap; a trap ends the process, so no mutant hunts it.)
    static let syncTurnWithWorkBehindItInOneBatch: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-batch")
        let caller = SerialQueue(label: "sim-batch-caller")
        let gate = Mailbox()
        let log = ScenarioLog()
        let holding = ScenarioBox(false)
        queue.async {  // holds the worker until both items below are queued
            holding.value = true
            gate.take()
        }
        caller.async { queue.sync { log.body(1) } }
        var reads = 0
        // The FIFO's count, read unlocked: every other simulated thread is stopped at the seam.
        while !(holding.value && queue.core.state.fifo.count > 0) && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        queue.async { log.body(2) }
        gate.post()
        caller.sync {}
        queue.sync {}
        Simulation.check(log.entries == [1, 2] && log.mostInBody == 1, "ran \(log.entries), \(log.mostInBody) at once")
    }

    /// Two callers sharing a `LocalCredentialCoordinator` ask to replace generation 0 at about
    /// the same time: one lease, one refresh (`coordinator-ignores-lease`: the second caller is
    /// granted a lease while the first one's is live, and refreshes again).
    static let twoCallersOfOneGenerationRefreshOnce: @Sendable () -> Void = {
        let scheduler = SerialQueue(label: "sim-coord")
        let coordinator = LocalCredentialCoordinator<String>(scheduler: scheduler, leaseDuration: .seconds(30))
        let callers = [SerialQueue(label: "sim-caller-0"), SerialQueue(label: "sim-caller-1")]
        let leases = ScenarioLog()
        for caller in callers {
            caller.async {
                coordinator.acquire(replacing: 0) { result in
                    guard case .success(.lease(let lease)) = result else { return }
                    leases.entries.append(Int(lease.generation))
                    caller.async { coordinator.publish("token-1", under: lease) { _ in } }  // the refresh
                }
            }
        }
        for _ in 0..<2 {
            for caller in callers { caller.sync {} }
        }
        Simulation.check(leases.entries.count == 1, "\(leases.entries.count) leases to refresh generation 0")
    }
}
#endif
