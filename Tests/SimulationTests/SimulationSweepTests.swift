#if SERIAL_SIMULATION
import Foundation
import SerialTestSupport
import SerialTesting
import Testing

/// The runs scripts ask for through the environment (skipped otherwise):
/// `SERIAL_SIMULATION_SEEDS=N` sweeps every catalogued scenario (`scripts/simulation.sh`, CI);
/// `SERIAL_SIMULATION_HUNT=MUTANT` explores the scenario that must find a mutant until it fails,
/// then replays the failure (`scripts/simulation-mutants.sh`, with the mutant's patch applied).
/// `SERIAL_SIMULATION_ONLY=NAME,NAME` limits the sweep to those catalogue entries.
@Suite struct SimulationSweepTests {
    static let seedsPerUnit = ProcessInfo.processInfo.environment["SERIAL_SIMULATION_SEEDS"].flatMap { Int($0) }
    static let hunted = ProcessInfo.processInfo.environment["SERIAL_SIMULATION_HUNT"]
    static let only = ProcessInfo.processInfo.environment["SERIAL_SIMULATION_ONLY"].map { $0.split(separator: ",").map(String.init) }
    /// `SERIAL_SIMULATION_SHARD=I/N`: this process sweeps the seeds equal to I modulo N of every
    /// scenario (a simulation runs one thread at a time, so N processes use N cores).
    static let shard: (index: UInt64, count: UInt64) = {
        let text = ProcessInfo.processInfo.environment["SERIAL_SIMULATION_SHARD"] ?? "0/1"
        let parts = text.split(separator: "/").compactMap { UInt64($0) }
        guard parts.count == 2, parts[1] > 0, parts[0] < parts[1] else {
            fatalError("SERIAL_SIMULATION_SHARD=\(text): expected I/N with 0 <= I < N, for example 0/2")
        }
        return (parts[0], parts[1])
    }()

    /// Prints one line per failure (with `replay:` and the token) and ends with
    /// `simulation: S scenarios, N schedules, F failures`.
    @Test(.enabled(if: Self.seedsPerUnit != nil))
    func everyCataloguedScenarioPassesItsSeeds() async {
        let unit = Self.seedsPerUnit ?? 0
        let shard = Self.shard
        let (schedules, failures) = await offThePool { () -> (Int, [String]) in
            var schedules = 0
            var failures: [String] = []
            for entry in ScenarioCatalog.all where Self.only?.contains(entry.name) ?? true {
                let started = ContinuousClock.now
                let report = entry.explore(
                    Simulation(strategy: entry.strategy, checksDeterminism: true),
                    seeds: entry.seeds(perUnit: unit).filter { $0 % shard.count == shard.index })
                schedules += report.results.count
                for result in report.failures {
                    let failure = result.failure!
                    failures.append("simulation failure: \(entry.name) seed \(result.seed) (\(failure.kind)): "
                        + "\(failure.report.split(separator: "\n").first ?? ""); replay: \(result.token)")
                }
                print("\(report.summary) in \(ContinuousClock.now - started)")
            }
            return (schedules, failures)
        }
        for line in failures { print(line) }
        print("simulation: \(ScenarioCatalog.all.count) scenarios, \(schedules) schedules, \(failures.count) failures")
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// Prints `mutant NAME: found after N schedules in S s, replayed identical K/K`, or that it
    /// was not found; fails in the second case.
    @Test(.enabled(if: Self.hunted != nil))
    func theMutantsScenarioFindsIt() async throws {
        let mutant = Self.hunted ?? ""
        let name = try #require(ScenarioCatalog.mutants[mutant], "no scenario for mutant \(mutant)")
        let entry = try #require(ScenarioCatalog.entry(named: name))
        let limit = ProcessInfo.processInfo.environment["SERIAL_SIMULATION_HUNT_LIMIT"].flatMap { UInt64($0) } ?? 1_000
        let replays = 10
        let line = await offThePool { () -> String in
            let simulation = Simulation(strategy: entry.strategy)
            let started = ContinuousClock.now
            for seed in 0..<limit {
                let result = simulation.run(seed: seed, entry.scenario)
                guard let failure = result.failure else { continue }
                let seconds = (ContinuousClock.now - started).seconds
                // How often the bug shows: the share of the first 100 schedules that fail.
                let failing = (0..<UInt64(100)).filter { simulation.run(seed: $0, entry.scenario).failure != nil }.count
                let identical = (0..<replays).filter { _ in
                    let replay = Simulation.replay(result.token, entry.scenario)
                    return replay.traceHash == result.traceHash && replay.failure?.kind == failure.kind
                        && replay.failure?.report == failure.report
                }.count
                return "mutant \(mutant): found after \(seed + 1) schedules in \(String(format: "%.2f", seconds)) s, "
                    + "replayed identical \(identical)/\(replays)\n"
                    + "  (\(failure.kind) in scenario \(name), seed \(seed); \(failing) of the first 100 schedules fail; "
                    + "replay: \(result.token))"
            }
            let seconds = (ContinuousClock.now - started).seconds
            return "mutant \(mutant): NOT found in \(limit) schedules "
                + "(\(String(format: "%.1f", seconds)) s, scenario \(name))"
        }
        print(line)
        #expect(line.contains(": found after") && line.contains("replayed identical \(replays)/\(replays)"), "\(line)")
    }
}

extension Duration {
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
#endif
