#if SERIAL_SIMULATION
@testable import SerialCore
import SerialTestSupport
import SerialTesting
import Testing

/// Attack on `StallWatchdog`: `watch` and `stopWatching` of one queue from two threads at once.
/// `stopWatching` removes the queue from the set under the watchdog's lock, then disarms it
/// under the queue's lock, after unlocking: a `watch` and a whole look (arming the queue, then
/// sleeping) can land in between, and the late disarm then leaves a watched idle queue unarmed
/// under a sleeping watchdog. The test thread watches the queue once more after both calls
/// returned, so it is watched whatever their order; its stall must then be reported.
@Suite struct StallWatchdogAttackScenarios {
    static let watchRacingStopWatching: @Sendable () -> Void = {
        let reports = ScenarioBox([String]())
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(1), checkInterval: .microseconds(1)) {
            reports.value.append("\($0.queueLabel) \($0.kind) \($0.threadID.map(String.init) ?? "sync")")
        }
        let queue = SerialQueue(label: "sim-raced")
        let a = SerialQueue(label: "sim-a")
        let b = SerialQueue(label: "sim-b")
        let clock = SerialQueue(label: "sim-clock")
        watchdog.watch(queue)
        var waits = 0
        while !(watchdog._isAsleep && queue._isArmed(for: watchdog)) && waits < 5_000 {
            _ = MonotonicInstant.now()
            waits += 1
        }
        // Time passes while the two calls race (clock reads move virtual time), so the watchdog's
        // interval can run out, and a look happen, between any two of their steps.
        clock.async { for _ in 0..<2_000 { _ = MonotonicInstant.now() } }
        a.async { watchdog.stopWatching(queue) }
        b.async { watchdog.watch(queue) }
        a.sync {}
        b.sync {}
        clock.sync {}
        watchdog.watch(queue)  // watched from here on, whichever of the two came last
        var reads = 0
        while !watchdog._isAsleep && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        queue.async { PromiseScenarios.pause(.milliseconds(3)) }
        queue.sync {}
        PromiseScenarios.pause(.milliseconds(1))
        let armedAfter = queue._isArmed(for: watchdog)
        watchdog.stop()
        // At least once: a thread the scheduler leaves unscheduled inside the `sync` below for a
        // virtual millisecond is a second, real stall.
        Simulation.check(
            !reports.value.isEmpty,
            "a watched queue's 3 ms stall (1 ms threshold) was reported \(reports.value); armed afterwards: \(armedAfter)")
    }

    /// Random only: the scenario's clock-reading waits can starve under PCT's strict priorities.
    /// Today: 4 of these 500 schedules fail (seeds 141, 353, 384, 487; 11 of 2,000), each
    /// "reported []; armed afterwards: false"; seed 141 replays 5 of 5 with
    /// SERIAL_SIMULATION_REPLAY=sim1:random:141:394:b8c509eb:8USE1EGAYcDUAuy9RwVqUIj2EkiKJgiFhQwoRyKCNnFichSnQH_u_aiLCoYagJYKkDASqJoYIBIUiaCKppmIKZgqgVJCRBD4bdstJJAbWUpiSI6oh_4lLQ
    /// With stopWatching looking again after its disarm when the queue was watched again
    /// meanwhile (a trial patch, not committed): 0 of 500.
    @Test(.disabled("reproduces bug: watch racing stopWatching leaves a watched queue unarmed, its stall never reported (4 of 500 schedules)"))
    func watchRacingStopWatchingKeepsAWatchedQueueReported() async {
        let report = await offThePool {
            Simulation(strategy: .random).explore(seeds: 0..<500, Self.watchRacingStopWatching)
        }
        let failures = report.failures
        #expect(
            failures.isEmpty,
            "\(failures.count) of 500 schedules failed; first: \(failures.first.map { "\($0.failure?.kind ?? "") seed \($0.seed)" } ?? "")")
        print("\(report.summary)")
    }
}
#endif
