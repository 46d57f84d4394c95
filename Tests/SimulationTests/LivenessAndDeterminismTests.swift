#if SERIAL_SIMULATION
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// `Simulation.eventually` (liveness), `checksDeterminism`, and PCT's change points fitted to
/// the length of the runs.
@Suite struct LivenessAndDeterminismTests {
    // MARK: Liveness

    @Test func aPropertyHotPastItsBoundFailsAsLiveness() async throws {
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 0) {
                let flag = ScenarioFlag()
                Simulation.eventually("the flag is set", withinSteps: 200) { flag.isSet }
                for _ in 0..<1_000 { _ = MonotonicInstant.now() }  // busy, and never sets it
                flag.isSet = true
            }
        }
        let failure = try #require(result.failure, "a property hot for 1,000 steps passed a bound of 200")
        #expect(failure.kind == "liveness")
        #expect(failure.report.contains("\"the flag is set\" did not hold for 201 scheduling points"), "\(failure.report)")
        #expect(failure.replayLine.contains("replay: sim1:random:0:"))
    }

    @Test func aRunThatEndsHotFailsAsLiveness() async throws {
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 0) {
                let flag = ScenarioFlag()
                Simulation.eventually("the flag is set") { flag.isSet }
            }
        }
        let failure = try #require(result.failure, "a run that ended hot passed")
        #expect(failure.kind == "liveness")
        #expect(failure.report.contains("ended with \"the flag is set\" not holding"), "\(failure.report)")
    }

    @Test func aPropertyThatCoolsInTimePasses() async {
        let report = await offThePool {
            Simulation(strategy: .random).explore(seeds: 0..<20) {
                let flag = ScenarioFlag()
                Simulation.eventually("the flag is set", withinSteps: 2_000) { flag.isSet }
                let queue = SerialQueue(label: "sim-setter")
                queue.async { flag.isSet = true }
                queue.sync {}
            }
        }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    /// The pool's liveness promise: work posted while two queues hop to each other forever on
    /// the pool's only thread still runs (a chain of `next` hops yields after 64).
    @Test func workBehindAnEndlessHopChainRuns() async {
        let report = await offThePool {
            Simulation(strategy: .random).explore(seeds: 0..<20, LivenessScenarios.hopChainYields)
        }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    // MARK: Determinism

    /// A failing scenario whose path depends on how many runs came before it (state kept from
    /// an earlier run): its token would not replay, and the check says so.
    @Test func aFailingRunThatDoesNotRepeatIsReportedNondeterministic() async throws {
        let result = await offThePool {
            Simulation(strategy: .random, checksDeterminism: true).run(seed: 0, DeterminismScenarios.dependsOnEarlierRuns)
        }
        let failure = try #require(result.failure)
        #expect(failure.kind == "nondeterministic", "\(failure.kind): \(failure.report)")
        #expect(failure.report.contains("they differ from scheduling point"), "\(failure.report)")
        #expect(failure.report.contains("failed check"), "the first run's failure is kept: \(failure.report)")
    }

    @Test func aFailingRunThatRepeatsKeepsItsFailure() async throws {
        let result = await offThePool {
            Simulation(strategy: .random, checksDeterminism: true).run(seed: 0, Scenarios.crossProducerOrder)
        }
        let seeds = await offThePool {
            Simulation(strategy: .random, checksDeterminism: true).explore(seeds: 0..<30, Scenarios.crossProducerOrder)
        }
        #expect(result.failure == nil || result.failure?.kind == "failed check")
        #expect(!seeds.failures.isEmpty && seeds.failures.allSatisfy { $0.failure?.kind == "failed check" },
            "\(seeds.failures.map { $0.failure!.kind })")
    }

    // MARK: PCT fitted to the run's length

    /// A bug that needs two preemptions at the right places in a run of about 100 steps: PCT
    /// depth 3 with change points drawn within the runs' length finds it; depths 1 and 2 cannot;
    /// depth 3 drawing within 2,000 steps rarely does.
    @Test func pctDepthMattersWithChangePointsFittedToTheRun() async {
        let counts = await offThePool { () -> [String: Int] in
            var counts: [String: Int] = [:]
            for depth in 1...3 {
                let report = Simulation(strategy: .pct(depth: depth)).explore(seeds: 0..<200, PCTScenarios.twoPreemptions)
                counts["fitted pct\(depth)"] = report.failures.count
            }
            let unfitted = (0..<UInt64(200)).filter {
                Simulation(strategy: .pct(depth: 3)).run(seed: $0, PCTScenarios.twoPreemptions).failure != nil
            }.count
            counts["pct3 within 2,000 steps"] = unfitted
            return counts
        }
        print("pct two-preemption bug, failing schedules of 200: \(counts.sorted { $0.key < $1.key })")
        #expect(counts["fitted pct1"] == 0 && counts["fitted pct2"] == 0, "\(counts)")
        #expect((counts["fitted pct3"] ?? 0) > (counts["pct3 within 2,000 steps"] ?? 0), "\(counts)")
        #expect((counts["fitted pct3"] ?? 0) >= 3, "\(counts)")
    }
}

/// A flag read by liveness properties without a lock (one simulated thread runs at a time).
final class ScenarioFlag: @unchecked Sendable {  // simulated threads only, one at a time
    var isSet = false
}

enum LivenessScenarios {
    static let hopChainYields: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 1, label: "sim-hops")
        let a = SerialQueue(label: "sim-hop-a", pool: pool)
        let b = SerialQueue(label: "sim-hop-b", pool: pool)
        let behind = SerialQueue(label: "sim-behind", pool: pool)
        let ran = ScenarioFlag()
        Simulation.eventually("work behind a hop chain runs", withinSteps: 20_000) { ran.isSet }
        @Sendable func hop(_ count: Int) {
            (count % 2 == 0 ? a : b).async { if !ran.isSet { hop(count + 1) } }
        }
        a.async {
            hop(0)
            behind.async { ran.isSet = true }
        }
        behind.sync {}
        a.sync {}
        b.sync {}
    }
}

enum DeterminismScenarios {
    private static let runs = Atomic<Int>(0)

    /// Always fails; takes one more `sync` every other run.
    static let dependsOnEarlierRuns: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-memory")
        let extra = DeterminismScenarios.runs.add(1, ordering: .relaxed).newValue % 2
        for _ in 0...extra { queue.sync {} }
        Simulation.check(false, "always fails")
    }
}

enum PCTScenarios {
    /// Fails when each of two threads sees the other inside its window: the first must be
    /// preempted inside its window, and the second inside its own.
    static let twoPreemptions: @Sendable () -> Void = {
        let p = SerialQueue(label: "sim-p")
        let q = SerialQueue(label: "sim-q")
        let flags = WindowFlags()
        p.async {
            flags.pInside = true
            for _ in 0..<30 { _ = MonotonicInstant.now() }
            flags.pSawQ = flags.qInside
            flags.pInside = false
        }
        q.async {
            flags.qInside = true
            flags.qSawP = flags.pInside
            for _ in 0..<30 { _ = MonotonicInstant.now() }
            flags.qInside = false
        }
        p.sync {}
        q.sync {}
        Simulation.check(!(flags.pSawQ && flags.qSawP), "each saw the other inside its window")
    }
}

final class WindowFlags: @unchecked Sendable {  // simulated threads only, one at a time
    var pInside = false
    var qInside = false
    var pSawQ = false
    var qSawP = false
}
#endif
