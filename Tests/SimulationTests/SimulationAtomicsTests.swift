#if SERIAL_SIMULATION
import SerialTestSupport
import SerialTesting
import Testing

@_spi(SerialSeam) @testable import SerialCore

/// The seam's atomics (`SeamAtomic`) are scheduling points: the simulator switches threads
/// between two atomic operations that have no lock or other seam operation between them. Each
/// scenario here has an outcome that only such a switch produces.
@Suite struct SimulationAtomicsTests {
    @Test func aThreadMaySwitchBetweenTwoAtomicOperations() async {
        let (report, seen) = await Self.explore(AtomicsScenarios.messagePassing)
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
        // (b, a) = (0, 1): the reader looked between the writer's two stores.
        #expect(seen.contains([0, 1]), "outcomes seen: \(seen.sorted { $0.lexicographicallyPrecedes($1) })")
        #expect(seen.isSubset(of: [[0, 0], [0, 1], [1, 1]]), "\(seen)")
    }

    @Test func cancelRacingTheRunOfDelayedWorkIsExploredBetweenTwoHandles() async {
        let (report, seen) = await Self.explore(AtomicsScenarios.cancelRacesClaim)
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
        // (second claimed, first claimed) = (1, 0): the claimer ran between the two cancels, or the
        // canceller between the two claims.
        #expect(seen.contains([1, 0]), "outcomes seen: \(seen.sorted { $0.lexicographicallyPrecedes($1) })")
        #expect(Set(report.results.map(\.traceHash)).count >= 10, "\(Set(report.results.map(\.traceHash)).count) paths")
    }

    /// Runs `scenario` under 60 random schedules. Random, not PCT: each outcome looked for needs a
    /// switch at one particular step, which PCT makes only when one of its few change points falls
    /// there.
    private static func explore(
        _ scenario: @escaping @Sendable (AtomicsOutcomes) -> @Sendable () -> Void
    ) async -> (SimulationReport, Set<[Int]>) {
        let outcomes = AtomicsOutcomes()
        let report = await offThePool { Simulation(strategy: .random).explore(seeds: 0..<60, scenario(outcomes)) }
        return (report, outcomes.seen)
    }
}

/// What each run of a scenario saw, collected across runs (one run at a time, each ordered after
/// the previous by the simulation's hand-offs).
final class AtomicsOutcomes: @unchecked Sendable {  // written by one simulated thread at a time
    private(set) var seen: Set<[Int]> = []

    func record(_ outcome: [Int]) {
        self.seen.insert(outcome)
    }
}

enum AtomicsScenarios {
    /// The writer (the scenario's thread) stores `a` then `b`; the reader (a queue's worker) loads
    /// `b` then `a`. Both stores or neither are seen unless a thread is switched between two
    /// atomic operations; `b` without `a` never is.
    static func messagePassing(_ outcomes: AtomicsOutcomes) -> @Sendable () -> Void {
        {
            let flags = Flags()
            let reader = SerialQueue(label: "sim-reader")
            let seen = AtomicsOutcomes()
            reader.async {
                let b = flags.b.load(ordering: .acquiring)
                let a = flags.a.load(ordering: .acquiring)
                seen.record([b, a])
            }
            flags.a.store(1, ordering: .releasing)
            flags.b.store(1, ordering: .releasing)
            reader.sync {}
            for outcome in seen.seen {
                Simulation.check(outcome != [1, 0], "the reader saw b = 1 before a = 1")
                outcomes.record(outcome)
            }
        }
    }

    final class Flags: Sendable {
        let a = SeamAtomic<Int>(0)
        let b = SeamAtomic<Int>(0)
    }

    /// The scenario's thread cancels `first` then `second`; a queue's worker claims the run of
    /// `second` then `first` (`claimRun`, as a queue does when delayed work falls due). Each
    /// handle goes to exactly one side; the worker wins `second` and loses `first` only when a
    /// thread is switched between two of these compare-and-swaps.
    static func cancelRacesClaim(_ outcomes: AtomicsOutcomes) -> @Sendable () -> Void {
        {
            let first = DelayedWork(deadline: MonotonicInstant(nanoseconds: 0)) {}
            let second = DelayedWork(deadline: MonotonicInstant(nanoseconds: 0)) {}
            let claimer = SerialQueue(label: "sim-claimer")
            let claimed = AtomicsOutcomes()
            claimer.async {
                let secondClaimed = second.claimRun() != nil
                let firstClaimed = first.claimRun() != nil
                claimed.record([secondClaimed ? 1 : 0, firstClaimed ? 1 : 0])
            }
            let firstCancelled = first.cancel()
            let secondCancelled = second.cancel()
            claimer.sync {}
            for outcome in claimed.seen {
                Simulation.check(outcome != [0, 1], "second was cancelled before first")
                Simulation.check(
                    outcome == [secondCancelled ? 0 : 1, firstCancelled ? 0 : 1],
                    "a handle went to both sides or neither: claimed \(outcome), "
                        + "cancelled first \(firstCancelled), second \(secondCancelled)")
                outcomes.record(outcome)
            }
        }
    }
}
#endif
