#if SERIAL_SIMULATION
@testable import SerialCore
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// Attacks on issue 39's hop locality (branch attack39), on virtual time: each scenario is written
/// from a promise of `WorkerPool`'s doc comment and the "Actor hops" article, not from the code.
enum PoolLocalityAttackScenarios {
    /// The documented bound while the free threads doze: the doze (50 µs) plus two patiences
    /// (10 µs), plus the timed wait's lateness and the free thread's scheduling (the simulator has
    /// neither beyond its random picks): 60 µs. The scenarios allow 200 µs of virtual time.
    static let boundNanoseconds: UInt64 = 200_000

    /// On a pool of `threads`, a ping-pong between a and b runs (until the end) beside an item of
    /// x that makes c runnable (into its own thread's `next` slot) and then does not end until c
    /// ran: with `pingPong`, only once a free thread has dozed beside the ping-pong. Promise: c
    /// waits no longer than the stated bound (a free thread watches, or dozes and then watches),
    /// whatever the ping-pong does on another thread.
    static func stuckFillBesideAPingPong(threads: Int, pingPong: Bool) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: threads, label: "sim-stuck")
            let a = SerialQueue(label: "sim-stuck-a", pool: pool)
            let b = SerialQueue(label: "sim-stuck-b", pool: pool)
            let c = SerialQueue(label: "sim-stuck-c", pool: pool)
            let x = SerialQueue(label: "sim-stuck-x", pool: pool)
            let stop = ScenarioBox(false)
            let ranC = ScenarioBox(false)
            let finished = ConditionLock(false)
            @Sendable func hop(here: SerialQueue, there: SerialQueue) {
                guard !stop.value else { return }
                there.async { hop(here: there, there: here) }
            }
            if pingPong {
                a.async { hop(here: a, there: b) }
                var reads = 0
                while pool._dozingThreadCount == 0 && reads < 5_000 {
                    _ = MonotonicInstant.now()
                    reads += 1
                }
                Simulation.check(pool._dozingThreadCount > 0, "no free thread dozed beside the ping-pong in \(reads) clock reads")
            }
            x.async {
                let posted = MonotonicInstant.now()
                c.async { ranC.value = true }
                var waited: UInt64 = 0
                while !ranC.value && waited <= 20 * Self.boundNanoseconds {
                    waited = MonotonicInstant.now().nanoseconds &- posted.nanoseconds
                }
                Simulation.check(
                    ranC.value && waited <= Self.boundNanoseconds,
                    "c waited \(waited / 1_000) µs of virtual time in a next slot behind x's item (ran: \(ranC.value)) while "
                        + "\(threads - 2) pool thread(s) were free\(pingPong ? " beside a ping-pong" : ""); the stated bound is 60 µs")
                stop.value = true
                finished.withLockThenBroadcast { $0 = true }
            }
            let ended = finished.wait(until: .now() + .seconds(60)) { $0 ? true : nil }
            Simulation.check(ended != nil, "x's item did not end within 60 s of virtual time")
            a.sync {}
            b.sync {}
            c.sync {}
        }
    }

    /// Locality alone: a ping-pong between a and b runs beside an item of x that only reads the
    /// clock (other threads' time passes), on `threads` threads. Promise: no free thread takes a
    /// `next` fill before it waited `WorkerPool.nextPatience` since the fill (the pool's
    /// invariant checks every steal in virtual time); the scenario itself checks nothing else.
    static func pingPongBesideAClockReader(threads: Int) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: threads, label: "sim-early")
            let a = SerialQueue(label: "sim-early-a", pool: pool)
            let b = SerialQueue(label: "sim-early-b", pool: pool)
            let x = SerialQueue(label: "sim-early-x", pool: pool)
            let stop = ScenarioBox(false)
            @Sendable func hop(here: SerialQueue, there: SerialQueue) {
                guard !stop.value else { return }
                there.async { hop(here: there, there: here) }
            }
            a.async { hop(here: a, there: b) }
            x.async {
                for _ in 0..<500 { _ = MonotonicInstant.now() }
                stop.value = true
            }
            x.sync {}
            a.sync {}
            b.sync {}
        }
    }

    /// After a ping-pong ends, every pool thread sleeps idle: none keeps watching or dozing (a
    /// doze ends in one more watch, then sleep): within 10 ms of virtual time both threads are on
    /// the idle list and none dozes (one snapshot under the pool's lock), and 200 µs later still.
    static let idleAfterAPingPong: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 2, label: "sim-idle")
        let a = SerialQueue(label: "sim-idle-a", pool: pool)
        let b = SerialQueue(label: "sim-idle-b", pool: pool)
        let finished = ConditionLock(false)
        @Sendable func hop(_ count: Int, here: SerialQueue, there: SerialQueue) {
            guard count < 300 else {
                finished.withLockThenBroadcast { $0 = true }
                return
            }
            there.async { hop(count + 1, here: there, there: here) }
        }
        a.async { hop(0, here: a, there: b) }
        let ended = finished.wait(until: .now() + .seconds(60)) { $0 ? true : nil }
        Simulation.check(ended != nil, "the ping-pong did not end within 60 s of virtual time")
        // One snapshot under the pool's lock: a dozer is on the idle list too, so separate reads race.
        @Sendable func sleepingAndDozing() -> (idle: Int, dozing: Int) {
            pool.core.mutex.withLock { (pool.core.state.idleWorkers.count, pool.core.state.dozingCount) }
        }
        var reads = 0
        var seen = sleepingAndDozing()
        while (seen.idle < 2 || seen.dozing > 0) && reads < 10_000 {
            _ = MonotonicInstant.now()
            reads += 1
            seen = sleepingAndDozing()
        }
        Simulation.check(
            seen.idle == 2 && seen.dozing == 0,
            "\(reads) µs of virtual time after the ping-pong: \(seen.idle) on the idle list, \(seen.dozing) dozing")
        // Asleep for good: nothing wakes an idle thread of an idle pool.
        for _ in 0..<200 { _ = MonotonicInstant.now() }
        let later = sleepingAndDozing()
        Simulation.check(later.idle == 2 && later.dozing == 0, "200 µs later: \(later.idle) idle, \(later.dozing) dozing")
    }
}

@Suite struct PoolLocalityAttackScenarioTests {
    /// Seeds per test: 20, or `ATTACK39_SEEDS` (for counting how often a bug shows).
    static var seedCount: UInt64 { UInt64(getenv("ATTACK39_SEEDS").flatMap { Int(String(cString: $0)) } ?? 20) }

    /// The tests that reproduce bugs run only when `ATTACK39_SEEDS` is set.
    static var countsBugs: Bool { getenv("ATTACK39_SEEDS") != nil }

    static func explore(_ name: String, seeds: Range<UInt64>, _ scenario: @escaping @Sendable () -> Void) async -> SimulationReport {
        let report = await offThePool { Simulation(strategy: .random).explore(name, seeds: seeds, scenario) }
        print("\(name): \(report.failures.count) of \(report.results.count) schedules failed")
        return report
    }

    @Test(arguments: [3, 4])
    func aFillLeftBehindAnEndlessItemWithoutAPingPongWaitsNoLongerThanTheBound(threads: Int) async {
        let report = await Self.explore(
            "stuck-fill-\(threads)", seeds: 0..<Self.seedCount, PoolLocalityAttackScenarios.stuckFillBesideAPingPong(threads: threads, pingPong: false))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    /// Found on ffe6a7b (20 seeds each): width 3, 1 of 20 failed (seed 15, an early steal: the
    /// locality invariant); width 4, 4 of 20 (seed 1: c waited 345 µs of virtual time against the
    /// stated 60 µs; seeds 8, 13, 19: early steals, 3-4 µs after the fill). Tokens in the report.
    @Test(
        .disabled(if: !Self.countsBugs, "reproduces bug: beside a ping-pong a queue in a next slot waits past the stated bound, and watchers take next fills before the patience"),
        arguments: [3, 4])
    func aFillLeftBehindAnEndlessItemBesideAPingPongWaitsNoLongerThanTheBound(threads: Int) async {
        let report = await Self.explore(
            "stuck-fill-ping-pong-\(threads)", seeds: 0..<Self.seedCount,
            PoolLocalityAttackScenarios.stuckFillBesideAPingPong(threads: threads, pingPong: true))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test(
        .disabled(if: !Self.countsBugs, "reproduces bug: a watcher takes a next fill before the patience (its since is the clock read before its scan)"),
        arguments: [2, 3, 4])
    func noNextFillIsTakenBeforeThePatienceBesideAPingPong(threads: Int) async {
        let report = await Self.explore(
            "early-steal-\(threads)", seeds: 0..<Self.seedCount, PoolLocalityAttackScenarios.pingPongBesideAClockReader(threads: threads))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test func everyThreadSleepsIdleAfterAPingPong() async {
        let report = await Self.explore("idle-after-ping-pong", seeds: 0..<Self.seedCount, PoolLocalityAttackScenarios.idleAfterAPingPong)
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }
}
#endif
