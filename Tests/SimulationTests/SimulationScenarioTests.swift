#if SERIAL_SIMULATION
import SerialTestSupport
import SerialTesting
import Testing

@testable import SerialCore

/// The runtime's real code under the simulator (built with `--traits Simulation`).
@Suite struct SimulationScenarioTests {
    @Test(arguments: [Simulation.Strategy.random, .pct(depth: 3)])
    func producersMixingSyncAndAsyncKeepFIFOAndOneOwner(strategy: Simulation.Strategy) async {
        let report = await offThePool {
            Simulation(strategy: strategy).explore(seeds: 0..<40, Scenarios.producersKeepFIFO(producers: 3, items: 4))
        }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
        #expect(report.results.allSatisfy { $0.threads == 5 })
        // The seeds explore: most runs take a path of their own.
        #expect(Set(report.results.map(\.traceHash)).count >= 20, "\(Set(report.results.map(\.traceHash)).count) paths")
    }

    @Test(arguments: [Simulation.Strategy.random, .pct(depth: 2), .pct(depth: 3)])
    func asyncThenSyncNeverLosesAWakeUp(strategy: Simulation.Strategy) async {
        let report = await offThePool { Simulation(strategy: strategy).explore(seeds: 0..<40, Scenarios.asyncThenSync) }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test func aCorrectMailboxNeverDeadlocks() async {
        let report = await offThePool { Simulation(strategy: .random).explore(seeds: 0..<60, Scenarios.mailbox) }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test(arguments: ["dedicated", "pooled"])
    func theSameSeedRunsTheSameTrace(mode: String) async {
        let scenario = mode == "pooled" ? Scenarios.pooledQueues : Scenarios.producersKeepFIFO(producers: 2, items: 3)
        let results = await offThePool {
            (0..<3).map { _ in Simulation(strategy: .random).run(seed: 11, scenario) }
        }
        #expect(Set(results.map(\.traceHash)).count == 1)
        #expect(Set(results.map(\.token)).count == 1)
        #expect(results.allSatisfy { $0.passed })
    }

    @Test func theLostWakeUpIsFoundAsADeadlockAndItsTokenReplaysIdentically() async throws {
        let (report, replays) = await offThePool { () -> (SimulationReport, [SimulationResult]) in
            let report = Simulation(strategy: .random).explore(seeds: 0..<100, Scenarios.lostWakeUp)
            guard let failed = report.failures.first else { return (report, []) }
            return (report, (0..<10).map { _ in Simulation.replay(failed.token, Scenarios.lostWakeUp) })
        }
        let failed = try #require(report.failures.first, "100 random schedules missed the lost wake-up")
        let failure = try #require(failed.failure)
        #expect(failure.kind == "deadlock")
        #expect(failure.report.contains("T0 \"main\": waits on condition"))
        #expect(failure.replayLine.contains("replay: \(failed.token)"))
        #expect(failure.replayLine.contains("seed \(failed.seed), strategy random"))
        #expect(replays.count == 10)
        #expect(replays.allSatisfy { $0.traceHash == failed.traceHash && $0.failure?.kind == "deadlock" })
        #expect(replays.allSatisfy { $0.failure?.report == failure.report })
        print("lost wake-up: \(report.failures.count) of 100 schedules deadlocked; first seed \(failed.seed); "
            + "replayed 10/10 with trace hash \(String(failed.traceHash, radix: 16))")
    }

    @Test func aWrongExpectationFailsUnderSomeInterleavingsAndReplays() async throws {
        let (report, replay) = await offThePool { () -> (SimulationReport, SimulationResult?) in
            let report = Simulation(strategy: .random).explore(seeds: 0..<30, Scenarios.crossProducerOrder)
            return (report, report.failures.first.map { Simulation.replay($0.token, Scenarios.crossProducerOrder) })
        }
        #expect(!report.failures.isEmpty && report.failures.count < 30, "\(report.failures.count) of 30 failed")
        let failed = try #require(report.failures.first)
        #expect(failed.failure?.kind == "failed check")
        #expect(failed.failure?.report.contains("order: [1, 2]") == true)
        #expect(replay?.traceHash == failed.traceHash && replay?.failure?.report == failed.failure?.report)
    }

    /// The pool's waits, spin windows and hand-off atomics (`next` slots, free count, hints) are all
    /// scheduling points.
    @Test(arguments: [Simulation.Strategy.random, .pct(depth: 3)])
    func pooledQueuesRunUnderTheSimulator(strategy: Simulation.Strategy) async {
        let report = await offThePool { Simulation(strategy: strategy).explore(seeds: 0..<20, Scenarios.pooledQueues) }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
        let steps = report.results.map(\.steps)
        print("pooled \(strategy): \(report.summary); steps \(steps.min() ?? 0)…\(steps.max() ?? 0), "
            + "threads \(report.results.first?.threads ?? 0), "
            + "\(Set(report.results.map(\.traceHash)).count) distinct traces")
    }

    @Test func aTrapPrintsTheReplayLine() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Simulation(strategy: .random).run(seed: 3) {
                let queue = SerialQueue(label: "sim-trap")
                queue.async { queue.sync {} }  // reentrant sync: Misuse.reentrantSync traps
                queue.sync {}
            }
        }
        let text = result?.standardErrorText ?? ""
        #expect(text.contains("SerialQueue \"sim-trap\": sync called from work already running on it"))
        #expect(text.contains("simulation failed (trap, signal"))
        #expect(text.contains("(seed 3, strategy random); replay: sim1:random:3:"))
    }
}
#endif
