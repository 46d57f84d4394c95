import SerialCore

/// What one simulated run did: whether it failed, how, and the token that replays it.
public struct SimulationResult: Sendable {
    /// The seed the run's strategy started from.
    public let seed: UInt64
    /// The strategy's short name (`random`, `pct3`).
    public let strategy: String
    /// Replays this whole run (`Simulation.replay`, or `SERIAL_SIMULATION_REPLAY`).
    public let token: String
    /// Scheduling points the run went through.
    public let steps: Int
    /// Simulated threads the run had, the scenario's own included.
    public let threads: Int
    /// A hash of every choice and seam event: a faithful replay has the same.
    public let traceHash: UInt64
    /// Virtual time the run took.
    public let virtualTime: Duration
    /// Why the run failed; `nil` when it passed.
    public let failure: SimulationFailureReport?

    /// Whether the run ended with every thread finished and no failed check.
    public var passed: Bool { self.failure == nil }
}

/// Why a simulated run failed, in words, with the line that replays it.
public struct SimulationFailureReport: Sendable, CustomStringConvertible {
    /// `failed check`, `invariant`, `deadlock`, `step limit`, `stuck` or `replay diverged`.
    public let kind: String
    /// What happened; for a deadlock, every thread and what it waits for.
    public let report: String
    /// The scheduling point at which it was seen.
    public let step: Int
    /// The token that replays the run.
    public let token: String
    /// One line with the kind, seed, strategy, and `replay:` followed by the token.
    public let replayLine: String

    /// The report, then the replay line.
    public var description: String { "\(self.report)\n\(self.replayLine)" }
}

/// The results of `Simulation.explore`: one per seed (or the one replayed).
public struct SimulationReport: Sendable {
    /// The scenario's name (the calling function, unless given).
    public let name: String
    /// Every run, in seed order.
    public let results: [SimulationResult]

    /// The runs that failed.
    public var failures: [SimulationResult] { self.results.filter { !$0.passed } }

    /// `simulation: NAME, N schedules, F failures`.
    public var summary: String {
        "simulation: \(self.name), \(self.results.count) schedules, \(self.failures.count) failures"
    }
}

#if SERIAL_SIMULATION
extension SimulationResult {
    init(_ outcome: SimulationOutcome) {
        self.seed = outcome.token.seed
        self.strategy = outcome.token.strategy.name
        self.token = outcome.token.description
        self.steps = outcome.steps
        self.threads = outcome.threads
        self.traceHash = outcome.traceHash
        self.virtualTime = .nanoseconds(Int64(clamping: outcome.virtualNanoseconds))
        self.failure = outcome.failure.map {
            SimulationFailureReport(
                kind: $0.kind.rawValue, report: $0.message, step: $0.step, token: $0.token.description,
                replayLine: $0.line)
        }
    }
}
#endif
