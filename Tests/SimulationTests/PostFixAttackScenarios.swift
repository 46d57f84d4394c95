#if SERIAL_SIMULATION
@testable import SerialCore
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// Attack 42 on the fixes after the last attack round, on virtual time: WorkerPool's hop locality
/// (a free thread watches `next` slots with a 5 µs patience, dozes 50 µs beside a chain, its scan
/// starts after the slot that turned over, a watch does not end on turnover while it watches
/// another slot's fill) and the stall watchdog's watch/stopWatching race. Each scenario is written
/// from a promise of the doc comments; the pool's invariants (work conservation, no steal before
/// the patience) are checked at every step besides what the scenario checks.
enum PostFixAttackScenarios {
    /// The documented bound while the free threads doze: the doze (50 µs) plus two patiences
    /// (10 µs), plus the free thread's scheduling; 200 µs of virtual time allowed, as attack 39.
    static let boundNanoseconds: UInt64 = PoolLocalityAttackScenarios.boundNanoseconds

    /// A chain of hops between `here` and `there` until `stop` is set.
    @Sendable static func hop(here: SerialQueue, there: SerialQueue, stop: ScenarioBox<Bool>) {
        guard !stop.value else { return }
        there.async { hop(here: there, there: here, stop: stop) }
    }

    /// On a pool of `threads`, `pairs` ping-pongs run (each on a thread of its own, mostly) beside
    /// an item of x that makes c runnable (into its own thread's `next` slot) and then does not end
    /// until c ran, started once a free thread dozed beside the ping-pongs. Promise (PoolCore's
    /// `dozeNanoseconds`, WorkerPool's doc): c waits no longer than the doze plus the watch while a
    /// thread is free, however many chains turn over on the other threads: the watcher's scan
    /// starts after the slot that turned over, so another chain's fill does not hide c's.
    static func stuckFillBesidePingPongs(threads: Int, pairs: Int) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: threads, label: "sim-pp")
            let chains = (0..<pairs).map { index in
                (SerialQueue(label: "sim-pp-a\(index)", pool: pool), SerialQueue(label: "sim-pp-b\(index)", pool: pool))
            }
            let c = SerialQueue(label: "sim-pp-c", pool: pool)
            let x = SerialQueue(label: "sim-pp-x", pool: pool)
            let stop = ScenarioBox(false)
            let ranC = ScenarioBox(false)
            let finished = ConditionLock(false)
            for (a, b) in chains { a.async { hop(here: a, there: b, stop: stop) } }
            var reads = 0
            while pool._dozingThreadCount == 0 && reads < 5_000 {
                _ = MonotonicInstant.now()
                reads += 1
            }
            Simulation.check(pool._dozingThreadCount > 0, "no free thread dozed beside \(pairs) ping-pongs in \(reads) clock reads")
            x.async {
                let posted = MonotonicInstant.now()
                c.async { ranC.value = true }
                var waited: UInt64 = 0
                while !ranC.value && waited <= 20 * Self.boundNanoseconds {
                    waited = MonotonicInstant.now().nanoseconds &- posted.nanoseconds
                }
                Simulation.check(
                    ranC.value && waited <= Self.boundNanoseconds,
                    "c waited \(waited / 1_000) µs of virtual time in a next slot behind x's item (ran: \(ranC.value)) beside "
                        + "\(pairs) ping-pong(s) on \(threads) threads; the stated bound is 60 µs")
                stop.value = true
                finished.withLockThenBroadcast { $0 = true }
            }
            let ended = finished.wait(until: .now() + .seconds(60)) { $0 ? true : nil }
            Simulation.check(ended != nil, "x's item did not end within 60 s of virtual time")
            for (a, b) in chains {
                a.sync {}
                b.sync {}
            }
            c.sync {}
        }
    }

    /// Locality beside several chains: `pairs` ping-pongs run beside an item of x that only reads
    /// the clock, on `threads` threads. Promise ("a queue that stays in one next slot ... for
    /// nextPatienceNanoseconds is taken", its first sighting "timed from a clock read after the
    /// word was read"): no free thread takes a `next` fill before it waited the patience since the
    /// fill, checked by the pool's invariant at every steal; with several chains the watcher's
    /// scan moves from slot to slot after each turnover.
    static func pingPongsBesideAClockReader(threads: Int, pairs: Int) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: threads, label: "sim-early2")
            let chains = (0..<pairs).map { index in
                (SerialQueue(label: "sim-early2-a\(index)", pool: pool), SerialQueue(label: "sim-early2-b\(index)", pool: pool))
            }
            let x = SerialQueue(label: "sim-early2-x", pool: pool)
            let stop = ScenarioBox(false)
            for (a, b) in chains { a.async { hop(here: a, there: b, stop: stop) } }
            x.async {
                for _ in 0..<500 { _ = MonotonicInstant.now() }
                stop.value = true
            }
            x.sync {}
            for (a, b) in chains {
                a.sync {}
                b.sync {}
            }
        }
    }

    /// A ping-pong whose every hop, after posting the next one (so its `next` slot is filled),
    /// blocks in `sync` onto a pooled queue s that another thread's work keeps busy now and then,
    /// beside x's item that leaves c in its `next` slot and waits for it. Promise: the blocking
    /// door hands the `next` queue on ("the queue in this thread's next slot ... go to the pool's
    /// run queue") and the pool's invariants hold at every step; every chain and c finish.
    static func blockingSyncInsideHops(threads: Int) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: threads, label: "sim-bs")
            let a = SerialQueue(label: "sim-bs-a", pool: pool)
            let b = SerialQueue(label: "sim-bs-b", pool: pool)
            let s = SerialQueue(label: "sim-bs-s", pool: pool)
            let y = SerialQueue(label: "sim-bs-y", pool: pool)
            let c = SerialQueue(label: "sim-bs-c", pool: pool)
            let x = SerialQueue(label: "sim-bs-x", pool: pool)
            let hops = ScenarioBox(0)
            let ranC = ScenarioBox(false)
            let finished = ConditionLock(0)
            @Sendable func hop(here: SerialQueue, there: SerialQueue) {
                hops.value += 1
                guard hops.value < 60 else {
                    finished.withLockThenBroadcast { $0 += 1 }
                    return
                }
                there.async { hop(here: there, there: here) }
                s.sync { _ = MonotonicInstant.now() }  // blocks while s runs y's work
            }
            a.async { hop(here: a, there: b) }
            y.async {
                for _ in 0..<20 {
                    s.async { for _ in 0..<5 { _ = MonotonicInstant.now() } }
                    _ = MonotonicInstant.now()
                }
            }
            x.async {
                c.async { ranC.value = true }
                var reads = 0
                while !ranC.value && reads < 20_000 {
                    _ = MonotonicInstant.now()
                    reads += 1
                }
                Simulation.check(ranC.value, "c never ran while x's item went on for \(reads) clock reads")
                finished.withLockThenBroadcast { $0 += 1 }
            }
            let ended = finished.wait(until: .now() + .seconds(60)) { $0 == 2 ? true : nil }
            Simulation.check(ended != nil, "the chain (\(hops.value) hops) or x's item did not end within 60 s of virtual time")
            for queue in [a, b, s, y, c, x] { queue.sync {} }
        }
    }

    /// On a pool of 3 threads, x's item leaves c in its `next` slot and goes on until y ran; c's
    /// own work, once it runs, also goes on until y ran. One free thread watches c's slot (the
    /// pool lets at most one of 3 spin), the other sleeps idle. From outside the pool, y becomes
    /// runnable `delay` clock reads after c's fill, around the watcher's patience. Promise
    /// (WorkerPool: "runnable work never waits longer than the patience (plus the rest of the
    /// current item) while a thread is idle"; the run queue's enqueue wakes no idle thread for a
    /// spinning one, which "will look"): y runs within the bound, whoever takes c.
    static func runQueueWorkBesideAWatcherThatSteals(delay: Int) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: 3, label: "sim-steal")
            let x = SerialQueue(label: "sim-steal-x", pool: pool)
            let c = SerialQueue(label: "sim-steal-c", pool: pool)
            let y = SerialQueue(label: "sim-steal-y", pool: pool)
            let ranY = ScenarioBox(false)
            let posted = ScenarioBox(false)
            let waitedForY = ScenarioBox<UInt64>(0)
            let finished = ConditionLock(0)
            @Sendable func untilYRan() {
                var reads = 0
                while !ranY.value && reads < 4_000 {
                    _ = MonotonicInstant.now()
                    reads += 1
                }
                finished.withLockThenBroadcast { $0 += 1 }
            }
            x.async {
                c.async { untilYRan() }
                posted.value = true
                untilYRan()
            }
            var waits = 0
            while !posted.value && waits < 5_000 {
                _ = MonotonicInstant.now()
                waits += 1
            }
            for _ in 0..<delay { _ = MonotonicInstant.now() }
            let enqueued = MonotonicInstant.now()
            y.async {
                waitedForY.value = MonotonicInstant.now().nanoseconds &- enqueued.nanoseconds
                ranY.value = true
            }
            let ended = finished.wait(until: .now() + .seconds(60)) { $0 == 2 ? true : nil }
            Simulation.check(ended != nil, "x's and c's items did not end within 60 s of virtual time")
            Simulation.check(
                ranY.value && waitedForY.value <= Self.boundNanoseconds,
                "y waited \(waitedForY.value / 1_000) µs of virtual time in the run queue (ran: \(ranY.value)) while x's and c's "
                    + "items went on; the pool's third thread was free (the stated bound: the patience, 5 µs)")
            for queue in [x, c, y] { queue.sync {} }
        }
    }

    /// The last reference to c goes (`release`), or c shuts down (`shutdown`), or the whole pool
    /// shuts down (`poolShutdown`), while c waits in the `next` slot of x's thread and a free
    /// thread may be watching that slot. Promise: c's work runs (draining) or is dropped
    /// (`.cancelPending`), the release or shutdown returns, no crash, and the pool's invariants hold.
    enum Ending: String, CaseIterable, Sendable { case release, shutdown, shutdownCancelling, poolShutdown }

    static func endingRacingAWatcher(threads: Int, ending: Ending) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: threads, label: "sim-end")
            let x = SerialQueue(label: "sim-end-x", pool: pool)
            let holder = ScenarioBox<SerialQueue?>(SerialQueue(label: "sim-end-c", pool: pool))
            let ranC = ScenarioBox(false)
            let posted = ScenarioBox(false)
            let itemDone = ConditionLock(false)
            x.async {
                holder.value!.async { ranC.value = true }
                posted.value = true
                var reads = 0
                while !ranC.value && reads < 400 {  // long past the patience, then it ends
                    _ = MonotonicInstant.now()
                    reads += 1
                }
                // A free thread watched c's slot: c ran while this item went on (400 µs, against the
                // stated 60 µs), unless a cancelling shutdown dropped it.
                Simulation.check(
                    ranC.value || ending == .shutdownCancelling,
                    "c waited 400 µs in the next slot of x's item, with a thread free, while its \(ending) went on")
                itemDone.withLockThenBroadcast { $0 = true }
            }
            var waits = 0
            while !posted.value && waits < 5_000 {
                _ = MonotonicInstant.now()
                waits += 1
            }
            Simulation.check(posted.value, "x's item never posted c")
            switch ending {
            case .release:
                holder.value = nil  // waits for c to drain
                Simulation.check(ranC.value, "c's last reference went and its work never ran")
            case .shutdown:
                holder.value!.shutdown()
                Simulation.check(ranC.value, "c shut down (draining) and its work never ran")
                holder.value = nil
            case .shutdownCancelling:
                holder.value!.shutdown(.cancelPending)
                holder.value = nil
            case .poolShutdown:
                pool.shutdown()
                Simulation.check(ranC.value, "the pool shut down (draining) and c's work never ran")
                holder.value = nil
            }
            let ended = itemDone.wait(until: .now() + .seconds(60)) { $0 ? true : nil }
            Simulation.check(ended != nil, "x's item did not end within 60 s of virtual time")
            if ending != .poolShutdown {
                x.sync {}
                pool.shutdown()
            }
        }
    }

    /// StallWatchdog's watch/stopWatching race ("stopWatching asks for another look if the queue
    /// was re-watched meanwhile"), with three watchdogs on one queue and another queue released
    /// and replaced meanwhile (a new queue may get the released one's memory: "watch drops dead
    /// entries"). Three threads watch and stop watching with all three watchdogs while virtual
    /// time passes; then each watchdog watches the queue for good. Promise: "reports ... any
    /// queue whose running work has not finished within runningThreshold": each watchdog reports
    /// the queue's 3 ms stall (1 ms threshold).
    static let threeWatchdogsRacingWatchAndStopWatching: @Sendable () -> Void = {
        let reports = ScenarioBox([Int: [String]]())
        let watchdogs = (0..<3).map { index in
            StallWatchdog(runningThreshold: .milliseconds(1), checkInterval: .microseconds(1)) {
                reports.value[index, default: []].append("\($0.queueLabel) \($0.kind)")
            }
        }
        let queue = SerialQueue(label: "sim-raced3")
        let other = ScenarioBox<SerialQueue?>(SerialQueue(label: "sim-other"))
        for watchdog in watchdogs { watchdog.watch(queue) }
        var waits = 0
        while !watchdogs.allSatisfy({ $0._isAsleep && queue._isArmed(for: $0) }) && waits < 5_000 {
            _ = MonotonicInstant.now()
            waits += 1
        }
        let clock = SerialQueue(label: "sim-clock3")
        let racers = (0..<3).map { SerialQueue(label: "sim-racer\($0)") }
        clock.async { for _ in 0..<2_000 { _ = MonotonicInstant.now() } }
        for (index, racer) in racers.enumerated() {
            racer.async {
                for step in 0..<6 {
                    let watchdog = watchdogs[(index + step) % 3]
                    switch (index + 2 * step) % 3 {
                    case 0: watchdog.stopWatching(queue)
                    case 1: watchdog.watch(queue)
                    default:
                        if index == 0 {
                            other.value = nil  // released; the next may get its memory
                            let fresh = SerialQueue(label: "sim-other")
                            watchdog.watch(fresh)
                            other.value = fresh
                        } else {
                            watchdog.stopWatching(queue)
                        }
                    }
                }
            }
        }
        for racer in racers { racer.sync {} }
        clock.sync {}
        for watchdog in watchdogs { watchdog.watch(queue) }  // watched by all three from here on
        var reads = 0
        while !watchdogs.allSatisfy(\._isAsleep) && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        queue.async { PromiseScenarios.pause(.milliseconds(3)) }
        queue.sync {}
        PromiseScenarios.pause(.milliseconds(1))
        let armed = watchdogs.map { queue._isArmed(for: $0) }
        for watchdog in watchdogs { watchdog.stop() }
        let missing = (0..<3).filter { !(reports.value[$0] ?? []).contains("sim-raced3 running") }
        Simulation.check(
            missing.isEmpty,
            "watchdogs \(missing) of 3 watching the queue never reported its 3 ms stall (1 ms threshold): \(reports.value); armed afterwards: \(armed)")
        other.value = nil
    }
}

@Suite struct PostFixAttackScenarioTests {
    /// Seeds per test: 20, or `ATTACK42_SEEDS`.
    static var seedCount: UInt64 { UInt64(getenv("ATTACK42_SEEDS").flatMap { Int(String(cString: $0)) } ?? 20) }


    static func explore(_ name: String, _ scenario: @escaping @Sendable () -> Void) async -> SimulationReport {
        let report = await offThePool { Simulation(strategy: .random).explore(name, seeds: 0..<Self.seedCount, scenario) }
        print("\(name): \(report.failures.count) of \(report.results.count) schedules failed")
        return report
    }

    @Test(arguments: [(4, 2), (5, 3)])
    func aFillLeftBehindAnEndlessItemBesidePingPongsWaitsNoLongerThanTheBound(threads: Int, pairs: Int) async {
        let report = await Self.explore(
            "pfa-stuck-\(threads)-\(pairs)", PostFixAttackScenarios.stuckFillBesidePingPongs(threads: threads, pairs: pairs))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test(arguments: [(4, 2), (5, 2)])
    func noNextFillIsTakenBeforeThePatienceBesidePingPongs(threads: Int, pairs: Int) async {
        let report = await Self.explore(
            "pfa-early-\(threads)-\(pairs)", PostFixAttackScenarios.pingPongsBesideAClockReader(threads: threads, pairs: pairs))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test func hopsThatBlockInSyncKeepThePoolsInvariantsOnTwoThreads() async {
        let report = await Self.explore("pfa-blocking-2", PostFixAttackScenarios.blockingSyncInsideHops(threads: 2))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    /// Found on 76e28db: 45 of 100 seeds fail the pool's work-conservation invariant (a runnable
    /// in the run queue, a thread asleep idle, none that will look). Passes 100 of 100 with the
    /// fix of f300b91.
    @Test  // reproduced 45 of 100 before its fix (f300b91)
    func hopsThatBlockInSyncKeepThePoolsInvariantsOnThreeThreads() async {
        let report = await Self.explore("pfa-blocking-3", PostFixAttackScenarios.blockingSyncInsideHops(threads: 3))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    /// Found on 76e28db, 100 seeds per delay: 2, 3, 4, 4, 4, 9 of 100 fail (26 of 600), on the
    /// pool's work-conservation invariant; with that invariant silenced locally, y waited 7.8-8.0 ms
    /// of virtual time (x's and c's whole items) or had not run when both ended, against the
    /// stated 5 µs. Fixed in f300b91 (the stolen branch of `PoolCore.threadMain` also wakes an
    /// idle thread when the run queue outnumbers the spinners): 100 of 100 per delay since.
    @Test(arguments: [0, 2, 4, 5, 6, 8])  // reproduced 26 of 600 schedules before its fix
    func runQueueWorkBesideAWatcherThatStealsWaitsNoLongerThanTheBound(delay: Int) async {
        let report = await Self.explore("pfa-steal-\(delay)", PostFixAttackScenarios.runQueueWorkBesideAWatcherThatSteals(delay: delay))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test(arguments: PostFixAttackScenarios.Ending.allCases)
    func aQueueEndedWhileInANextSlotDrainsOrDrops(ending: PostFixAttackScenarios.Ending) async {
        let report = await Self.explore("pfa-end-\(ending)", PostFixAttackScenarios.endingRacingAWatcher(threads: 2, ending: ending))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test func threeWatchdogsRacingWatchAndStopWatchingEachReport() async {
        let report = await Self.explore("pfa-watchdogs3", PostFixAttackScenarios.threeWatchdogsRacingWatchAndStopWatching)
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }
}
#endif
