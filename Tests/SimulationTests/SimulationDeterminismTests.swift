#if SERIAL_SIMULATION
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// The simulator's promise: the same seed runs the same interleaving (the same trace hash and
/// token), pooled scenarios included.
@Suite(.serialized) struct SimulationDeterminismTests {
    // "poolShutdown" is not deterministic: see `poolShutdownIsDeterministic`.
    @Test(arguments: ["timers", "nestedSync", "blockingWrapper", "shutdownRacing", "pooledShutdownRacing", "manyThreads"])
    func theSameSeedGivesTheSameTraceEveryTime(name: String) async {
        let scenario: @Sendable () -> Void =
            switch name {
            case "poolShutdown": SimulationTestScenarios.poolShutdownWithManyQueues
            case "timers": SimulationTestScenarios.timersAndAsyncAfter
            case "nestedSync": SimulationTestScenarios.nestedSyncAcrossQueues
            case "blockingWrapper": SimulationTestScenarios.blockingWrapperOnPool
            case "shutdownRacing": SimulationTestScenarios.shutdownRacingSubmissions
            case "pooledShutdownRacing": SimulationTestScenarios.pooledShutdownRacingSubmissions
            default: SimulationTestScenarios.manyThreads
            }
        let results = await offThePool {
            [7, 8, 9].flatMap { seed in SimulationTestScenarios.repeated(.random, seed: seed, times: 4, scenario) }
                + SimulationTestScenarios.repeated(.pct(depth: 3), seed: 5, times: 4, scenario)
        }
        for group in stride(from: 0, to: results.count, by: 4) {
            let slice = Array(results[group..<group + 4])
            #expect(Set(slice.map(\.traceHash)).count == 1, "\(name):\n\(SimulationTestScenarios.describe(slice))")
            #expect(Set(slice.map(\.token)).count == 1, "\(name): tokens differ")
            #expect(slice.allSatisfy { $0.passed }, "\(name):\n\(SimulationTestScenarios.describe(slice))")
        }
        // For cross-process comparison: run the test twice and compare these lines.
        print("attack determinism \(name): " + results.map { String($0.traceHash, radix: 16) }.joined(separator: " "))
    }

    /// Explores a few hundred seeds of the pooled scenarios looking for a real failure.
    @Test(arguments: ["poolShutdown", "blockingWrapper", "shutdownRacing"])
    func exploringPooledScenariosFindsNoFailure(name: String) async {
        let scenario: @Sendable () -> Void =
            switch name {
            case "poolShutdown": SimulationTestScenarios.poolShutdownWithManyQueues
            case "blockingWrapper": SimulationTestScenarios.blockingWrapperOnPool
            default: SimulationTestScenarios.shutdownRacingSubmissions
            }
        let report = await offThePool {
            Simulation(strategy: .pct(depth: 3)).explore(seeds: 0..<60, scenario)
        }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }


    @Test
    func poolShutdownIsDeterministic() async {
        let (results, replays) = await offThePool { () -> ([SimulationResult], [SimulationResult]) in
            let results = SimulationTestScenarios.repeated(.random, seed: 7, times: 10, SimulationTestScenarios.twoQueuesPoolShutdown)
            let replays = (0..<10).map { _ in Simulation.replay(results[0].token, SimulationTestScenarios.twoQueuesPoolShutdown) }
            return (results, replays)
        }
        print("attack pool shutdown: hashes \(Set(results.map(\.traceHash)).map { String($0, radix: 16) }), "
            + "tokens \(Set(results.map(\.token))), replays diverged \(replays.filter { !$0.passed }.count)/10: "
            + "\(replays.first { !$0.passed }?.failure?.replayLine ?? "")")
        #expect(Set(results.map(\.traceHash)).count == 1)
        #expect(replays.allSatisfy { $0.passed && $0.traceHash == results[0].traceHash })
        // With work on four queues the tokens differ too, and a token does not replay.
        let (token, bigReplays) = await offThePool { () -> (String, [SimulationResult]) in
            let first = Simulation(strategy: .random).run(seed: 7, SimulationTestScenarios.poolShutdownWithManyQueues)
            return (first.token, (0..<10).map { _ in Simulation.replay(first.token, SimulationTestScenarios.poolShutdownWithManyQueues) })
        }
        let diverged = bigReplays.filter { $0.failure?.kind == "replay diverged" }
        print("attack pool shutdown (4 queues): token \(token) replayed: \(10 - diverged.count)/10 faithful; "
            + "\(diverged.first?.failure?.replayLine ?? "")")
        #expect(diverged.isEmpty)
    }
}
#endif
