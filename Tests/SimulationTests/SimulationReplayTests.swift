#if SERIAL_SIMULATION
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// The simulator's promise: a printed token replays the same run, and a token that does not fit
/// the scenario (foreign, tampered, malformed) says so.
@Suite(.serialized) struct SimulationReplayTests {
    @Test func aPooledFailureReplaysIdenticallyTenTimes() async throws {
        let (report, replays) = await offThePool { () -> (SimulationReport, [SimulationResult]) in
            let report = Simulation(strategy: .random).explore(seeds: 0..<200, SimulationTestScenarios.pooledCrossOrder)
            guard let failed = report.failures.first else { return (report, []) }
            return (report, (0..<10).map { _ in Simulation.replay(failed.token, SimulationTestScenarios.pooledCrossOrder) })
        }
        let failed = try #require(report.failures.first, "no failing seed in 40")
        #expect(replays.count == 10)
        #expect(replays.allSatisfy { $0.traceHash == failed.traceHash && $0.token == failed.token })
        #expect(replays.allSatisfy { $0.failure?.report == failed.failure?.report })
        #expect(replays.allSatisfy { $0.failure?.kind == "failed check" })
    }

    /// A token from a passing scenario replayed on a scenario that can deadlock.
    @Test func aForeignTokenReportsReplayDivergedOnADeadlockingScenario() async throws {
        let results = await offThePool { () -> [SimulationResult] in
            let donor = Simulation(strategy: .random).run(seed: 1, Scenarios.producersKeepFIFO(producers: 2, items: 2))
            return [donor] + (0..<10).map { _ in Simulation.replay(donor.token, Scenarios.lostWakeUp) }
        }
        let donor = results[0]
        #expect(donor.passed)
        for result in results.dropFirst() {
            #expect(result.failure?.kind == "replay diverged",
                "token \(donor.token) on lostWakeUp: \(result.failure?.replayLine ?? "passed")")
        }
    }

    /// Foreign tokens (from a passing scenario) replayed on scenarios that fail under some
    /// schedules: once the replay leaves its record the strategy's picker takes over, and a
    /// failure it then meets is what the result reports.
    @Test
    func aDivergedReplayThatThenFailsStillSaysReplayDiverged() async {
        let results = await offThePool { () -> [(String, SimulationResult)] in
            var results: [(String, SimulationResult)] = []
            for seed in UInt64(0)..<20 {
                let donor = Simulation(strategy: .random).run(seed: seed, Scenarios.producersKeepFIFO(producers: 2, items: 2))
                results.append((donor.token, Simulation.replay(donor.token, Scenarios.crossProducerOrder)))
                results.append((donor.token, Simulation.replay(donor.token, Scenarios.lostWakeUp)))
            }
            return results
        }
        let wrong = results.filter { $0.1.failure?.kind != "replay diverged" }
        for (token, result) in wrong.prefix(3) {
            print("attack diverged replay reported as \(result.failure?.kind ?? "passed"): donor \(token) → "
                + "\(result.failure?.replayLine ?? "")")
        }
        #expect(wrong.isEmpty, "\(wrong.count) of \(results.count) foreign replays did not say `replay diverged`")
    }

    /// The same without a later failure: the replay must not pass silently.
    @Test func aForeignTokenOnAPassingScenarioReportsReplayDiverged() async throws {
        let (donor, result) = await offThePool { () -> (SimulationResult, SimulationResult) in
            let donor = Simulation(strategy: .random).run(seed: 1, Scenarios.producersKeepFIFO(producers: 2, items: 2))
            return (donor, Simulation.replay(donor.token, Scenarios.mailbox))
        }
        #expect(result.failure?.kind == "replay diverged", "\(result.failure?.replayLine ?? "passed")")
    }

    /// A token that makes no choice at all replays on any scenario that makes none: it cannot
    /// tell them apart (a limit of a token that holds only the choices).
    @Test func aChoiceFreeTokenReplaysOnAnyChoiceFreeScenario() async {
        let (donor, result) = await offThePool { () -> (SimulationResult, SimulationResult) in
            let donor = Simulation(strategy: .random).run(seed: 1) { _ = MonotonicInstant.now() }
            return (donor, Simulation.replay(donor.token) { Simulation.check(true, "") ; _ = MonotonicInstant.now(); _ = MonotonicInstant.now() })
        }
        print("attack choice-free token \(donor.token): replay on another scenario passed=\(result.passed) "
            + "\(result.failure?.replayLine ?? "")")
    }

    @Test func aTamperedTokenHashReportsReplayDiverged() async {
        let (donor, result) = await offThePool { () -> (SimulationResult, SimulationResult) in
            let donor = Simulation(strategy: .random).run(seed: 2, Scenarios.pooledQueues)
            var parts = donor.token.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            parts[4] = parts[4] == "00000000" ? "00000001" : "00000000"
            return (donor, Simulation.replay(parts.joined(separator: ":"), Scenarios.pooledQueues))
        }
        #expect(donor.passed)
        #expect(result.failure?.kind == "replay diverged", "\(result.failure?.replayLine ?? "passed")")
    }

    @Test(arguments: ["garbage", "sim1:random:1:2:zz:AA", "sim2:random:1:0:811c9dc5:", "sim1:pct0:1:0:811c9dc5:"])
    func aMalformedTokenTrapsQuotingIt(token: String) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [token] in
            _ = Simulation.replay(token) {}
        }
        let text = result?.standardErrorText ?? ""
        #expect(text.contains("is not a schedule token"), "\(text)")
    }

    @Test func aMalformedTokenInTheEnvironmentTrapsQuotingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            setenv(Simulation.replayVariable, "sim1:nonsense", 1)
            _ = Simulation().explore(seeds: 0..<1) {}
        }
        let text = result?.standardErrorText ?? ""
        #expect(text.contains("sim1:nonsense") && text.contains("is not a schedule token"), "\(text)")
    }

    /// A token with a huge PCT depth parses, then the PCT picker builds `depth - 1` change points:
    /// 165 s and ~35 GB later the process dies with "failed to allocate 35433480128 bytes".
    @Test
    func aTokenWithAHugePCTDepthIsRefusedClearly() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Simulation.replay("sim1:pct9223372036854775807:1:0:811c9dc5:") {}
        }
        let text = result?.standardErrorText ?? ""
        print("attack huge pct depth: \(text)")
        #expect(text.contains("is not a schedule token") || text.contains("depth"), "\(text)")
    }
}
#endif
