import SerialCore

/// Runs your code on the runtime's real threads under a seeded, deterministic scheduler, and
/// replays any run it made from one line.
///
/// In a build with the package trait `Simulation` (`swift build --traits Simulation`), every
/// thread the scenario starts through the runtime (a `SerialQueue`'s worker, a thread of your
/// own is not one) runs only when the scheduler picks it, one at a time. Each mutex lock and
/// unlock, condition wait and signal, thread start and join, and clock read is a point where
/// the scheduler may switch threads; time is virtual and jumps ahead when every thread waits for
/// a deadline. The strategy and seed fix every choice, so a run that fails fails again.
///
/// ```swift
/// let report = Simulation(strategy: .pct(depth: 3)).explore(seeds: 0..<100) {
///     let queue = SerialQueue(label: "db")
///     let log = LockedLog()                    // a log type of your own
///     queue.async { log.append(1) }
///     queue.sync { log.append(2) }
///     Simulation.check(log.values == [1, 2], "sync ran before earlier async work: \(log.values)")
/// }
/// // A failure prints: simulation failed (failed check) … replay: sim1:pct3:17:212:…
/// // Replay it: Simulation.replay("sim1:pct3:17:212:…") { same scenario }, or set
/// // SERIAL_SIMULATION_REPLAY to that token and run the test again.
/// ```
///
/// **What it controls.** The seam operations above, on threads started by the runtime inside the
/// scenario. **What it does not.** Plain memory and atomic accesses between threads (they do
/// not switch threads: ThreadSanitizer's job), system calls outside the seam, Swift tasks and
/// the cooperative pool, and threads started any other way: they run as in an ordinary build.
///
/// Without the trait, `isAvailable` is `false` and running a scenario traps, saying so.
public struct Simulation: Sendable {
    /// How the scheduler picks the next thread.
    public enum Strategy: Sendable, Hashable {
        /// Uniformly among the threads that may run, at every point.
        case random
        /// Probabilistic concurrency testing: random thread priorities, `depth - 1` points at
        /// which the running thread drops to the lowest; finds bugs that need `depth - 1`
        /// preemptions in the right places with a probability that does not shrink with
        /// the length of the run as fast as random's does.
        case pct(depth: Int)
    }

    /// The strategy of every run this value starts.
    public var strategy: Strategy
    /// A run with more scheduling points fails (`stepLimit`): a livelock, or a scenario too big.
    public var maximumSteps: Int

    /// A simulation with `strategy`; a run may take up to `maximumSteps` scheduling points.
    public init(strategy: Strategy = .pct(depth: 3), maximumSteps: Int = 200_000) {
        if case .pct(let depth) = strategy, !(1...64).contains(depth) {
            fatalError("Simulation: PCT depth \(depth) is out of range: use 1 to 64 (depth d finds bugs that need d - 1 preemptions)")
        }
        self.strategy = strategy
        self.maximumSteps = maximumSteps
    }

    /// Whether this build has the simulator (the package trait `Simulation`).
    public static var isAvailable: Bool {
        #if SERIAL_SIMULATION
        return true
        #else
        return false
        #endif
    }

    /// The environment variable that makes `explore` replay one token instead of its seeds.
    public static let replayVariable = "SERIAL_SIMULATION_REPLAY"

    /// Runs `scenario` once per seed, each run on fresh simulated threads, and returns what each
    /// did. Each failure is printed to standard error as its report, then one line with
    /// `replay:` and the token. When `SERIAL_SIMULATION_REPLAY` holds a token, that run alone is
    /// replayed instead.
    ///
    /// **Threads.** Blocks the calling thread until the runs end; call it from a thread of your
    /// own (not from a Swift task on the cooperative pool). `scenario` runs on a new thread.
    ///
    /// - Precondition: Built with the `Simulation` trait; not called from inside a scenario.
    public func explore(
        _ name: String = #function, seeds: some Sequence<UInt64>, _ scenario: @escaping @Sendable () -> Void
    ) -> SimulationReport {
        #if SERIAL_SIMULATION
        if let token = SimulationRun.environment(Self.replayVariable), !token.isEmpty {
            return SimulationReport(name: name, results: [Self.replay(token, scenario)])
        }
        #endif
        var results: [SimulationResult] = []
        for seed in seeds {
            results.append(self.run(seed: seed, scenario))
        }
        return SimulationReport(name: name, results: results)
    }

    /// Runs `scenario` once with `seed` (see `explore`).
    public func run(seed: UInt64, _ scenario: @escaping @Sendable () -> Void) -> SimulationResult {
        #if SERIAL_SIMULATION
        let scheduler = SimulationScheduler(strategy: self.strategy.schedule, seed: seed)
        return Self.execute(scheduler, maximumSteps: self.maximumSteps, scenario)
        #else
        Self.unavailable()
        #endif
    }

    /// Replays the run that printed `token`: the same choices at the same points, so the same
    /// interleaving, as long as the scenario and the code under it are unchanged. A replay that
    /// leaves the recorded path fails with `replayDiverged`.
    ///
    /// - Precondition: `token` is a token printed by a run (it traps otherwise, quoting it).
    public static func replay(
        _ token: String, maximumSteps: Int = 200_000, _ scenario: @escaping @Sendable () -> Void
    ) -> SimulationResult {
        #if SERIAL_SIMULATION
        guard let parsed = ScheduleToken(parsing: token) else {
            fatalError("Simulation.replay: \"\(token)\" is not a schedule token (sim1:STRATEGY:SEED:…)")
        }
        return Self.execute(SimulationScheduler(replaying: parsed), maximumSteps: maximumSteps, scenario)
        #else
        Self.unavailable()
        #endif
    }

    /// Records a failed expectation when `condition` is false: the run goes on, and its result
    /// reports the first failed check with the replay line. Outside a simulated run it traps
    /// with `message` (a failed expectation has nowhere else to go).
    public static func check(
        _ condition: Bool, _ message: @autoclosure () -> String, fileID: StaticString = #fileID, line: UInt = #line
    ) {
        guard !condition else { return }
        let text = "\(message()) (\(fileID):\(line))"
        #if SERIAL_SIMULATION
        if SimulationRun.recordCheckFailure(text) { return }
        #endif
        fatalError("Simulation.check failed outside a simulated run: \(text)")
    }

    #if SERIAL_SIMULATION
    private static func execute(
        _ scheduler: SimulationScheduler, maximumSteps: Int, _ scenario: @escaping @Sendable () -> Void
    ) -> SimulationResult {
        var limits = SimulationLimits()
        limits.maximumSteps = maximumSteps
        let outcome = SimulationRun.execute(scheduler, limits: limits, scenario)
        let result = SimulationResult(outcome)
        if let failure = result.failure {
            SimulationRun.writeToStandardError("\(failure.report)\n\(failure.replayLine)\n")
        }
        return result
    }
    #else
    private static func unavailable() -> Never {
        fatalError("""
            Simulation: this build has no simulator. Build with the package trait: \
            swift build --traits Simulation --scratch-path .build-sim
            """)
    }
    #endif
}

#if SERIAL_SIMULATION
extension Simulation.Strategy {
    var schedule: ScheduleStrategy {
        switch self {
        case .random: return .random
        case .pct(let depth): return .pct(depth: depth)
        }
    }
}
#endif
