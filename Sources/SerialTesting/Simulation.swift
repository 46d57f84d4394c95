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
/// let report = Simulation(strategy: .random).explore(seeds: 0..<200) {
///     let account = Account(balance: 100)      // an actor of your own
///     async let first = account.withdraw(80)   // each checks the balance, then awaits
///     async let second = account.withdraw(80)  // an approval before it debits
///     _ = await (first, second)
///     let balance = await account.balance
///     Simulation.check(balance >= 0, "overdrawn: \(balance)")
/// }
/// // A failure prints: simulation failed (failed check) … replay: sim1:random:0:41:…
/// // Replay it: Simulation.replay("sim1:random:0:41:…") { same scenario }, or set
/// // SERIAL_SIMULATION_REPLAY to that token and run the test again.
/// ```
///
/// **What it controls.** The seam operations above, on threads started by the runtime inside the
/// scenario; in an `async` scenario, every task, default actor and continuation of the run (on a
/// pool of the run's threads) and every `Task.sleep` (on virtual time). **What it does not.**
/// Plain memory and atomic accesses between threads (they do not switch threads: ThreadSanitizer's
/// job), system calls outside the seam, `ContinuousClock.now`, the main actor, tasks started by a
/// plain (not `async`) scenario, and threads started any other way: they run as in an ordinary
/// build. The article `ReplayableSchedules` lists the details.
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
    /// Threads of the pool that runs an async scenario's tasks (the cooperative pool's part).
    public var taskThreads: Int
    /// Runs each failing seed a second time and compares the two runs' traces step by step: a
    /// run that does not repeat (it read real time, or a thread outside the run touched its
    /// state) fails as `nondeterministic`, naming the first step where the two runs differ,
    /// instead of printing a token that would not replay. Off by default (a failing seed costs
    /// twice); CI's sweep turns it on.
    public var checksDeterminism: Bool

    /// A simulation with `strategy`; a run may take up to `maximumSteps` scheduling points, and
    /// an async scenario's tasks run on `taskThreads` simulated threads.
    public init(
        strategy: Strategy = .pct(depth: 3), maximumSteps: Int = 200_000, taskThreads: Int = 2,
        checksDeterminism: Bool = false
    ) {
        if case .pct(let depth) = strategy, !(1...64).contains(depth) {
            fatalError("Simulation: PCT depth \(depth) is out of range: use 1 to 64 (depth d finds bugs that need d - 1 preemptions)")
        }
        if taskThreads < 1 { fatalError("Simulation: taskThreads \(taskThreads) must be at least 1") }
        self.strategy = strategy
        self.maximumSteps = maximumSteps
        self.taskThreads = taskThreads
        self.checksDeterminism = checksDeterminism
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
    /// With `.pct(depth:)`, the change points of each run are drawn within the longest run seen
    /// so far in this call (the first run draws them within 2,000 steps): PCT's guarantee
    /// assumes the points fall inside the run, and a short scenario would otherwise see most of
    /// them never fire. The token records the horizon, so a replay draws the same points.
    ///
    /// **Threads.** Blocks the calling thread until the runs end; call it from a thread of your
    /// own (not from a Swift task on the cooperative pool). `scenario` runs on a new thread.
    ///
    /// - Precondition: Built with the `Simulation` trait; not called from inside a scenario.
    public func explore(
        _ name: String = #function, seeds: some Sequence<UInt64>, _ scenario: @escaping @Sendable () -> Void
    ) -> SimulationReport {
        self.explore(name, seeds: seeds, Scenario.threads(scenario))
    }

    /// Runs the async `scenario` once per seed (see `explore` for threads). Its task, and every
    /// task, actor and continuation it starts, runs on the run's simulated threads, and its
    /// sleeps on the run's virtual time: see the article's "Async code" section.
    public func explore(
        _ name: String = #function, seeds: some Sequence<UInt64>, _ scenario: @escaping @Sendable () async -> Void
    ) -> SimulationReport {
        self.explore(name, seeds: seeds, Scenario.tasks(scenario))
    }

    private func explore(_ name: String, seeds: some Sequence<UInt64>, _ scenario: Scenario) -> SimulationReport {
        #if SERIAL_SIMULATION
        if let token = SimulationRun.environment(Self.replayVariable), !token.isEmpty {
            return SimulationReport(name: name, results: [Self.replay(token, maximumSteps: self.maximumSteps, scenario)])
        }
        var results: [SimulationResult] = []
        var longest = 0
        for seed in seeds {
            var schedule = self.strategy.schedule
            if case .pct(let depth, _) = schedule, longest > 0 { schedule = .pct(depth: depth, expectedSteps: longest) }
            let result = self.run(SimulationScheduler(strategy: schedule, seed: seed), scenario)
            longest = max(longest, result.steps)
            results.append(result)
        }
        return SimulationReport(name: name, results: results)
        #else
        Self.unavailable()
        #endif
    }

    /// Runs `scenario` once with `seed` (see `explore`).
    public func run(seed: UInt64, _ scenario: @escaping @Sendable () -> Void) -> SimulationResult {
        #if SERIAL_SIMULATION
        return self.run(SimulationScheduler(strategy: self.strategy.schedule, seed: seed), .threads(scenario))
        #else
        Self.unavailable()
        #endif
    }

    /// Runs the async `scenario` once with `seed` (see `explore`).
    public func run(seed: UInt64, _ scenario: @escaping @Sendable () async -> Void) -> SimulationResult {
        #if SERIAL_SIMULATION
        return self.run(SimulationScheduler(strategy: self.strategy.schedule, seed: seed), .tasks(scenario))
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
        Self.replay(token, maximumSteps: maximumSteps, .threads(scenario))
    }

    /// Replays the async run that printed `token` (see the other `replay`).
    public static func replay(
        _ token: String, maximumSteps: Int = 200_000, _ scenario: @escaping @Sendable () async -> Void
    ) -> SimulationResult {
        Self.replay(token, maximumSteps: maximumSteps, .tasks(scenario))
    }

    private static func replay(_ token: String, maximumSteps: Int, _ scenario: Scenario) -> SimulationResult {
        #if SERIAL_SIMULATION
        guard let parsed = ScheduleToken(parsing: token) else {
            fatalError("Simulation.replay: \"\(token)\" is not a schedule token (sim1:STRATEGY:SEED:…)")
        }
        var simulation = Simulation(maximumSteps: maximumSteps)
        simulation.checksDeterminism = false
        return simulation.run(SimulationScheduler(replaying: parsed), scenario)
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

    /// Declares a property that must eventually hold (a "hot" state that must end, as in
    /// Coyote's liveness monitors): from now on in this run, whenever `holds` is false at a
    /// scheduling point the run is hot, and a run that stays hot for more than `steps`
    /// consecutive scheduling points, or ends hot, fails as `liveness` with the replay line.
    ///
    /// `holds` runs at every scheduling point, with every other thread of the run stopped: it
    /// reads your state directly and must not lock, wait or call the runtime.
    ///
    /// - Precondition: Called inside a simulated run (it traps otherwise).
    public static func eventually(
        _ name: String, withinSteps steps: Int = 10_000, _ holds: @escaping @Sendable () -> Bool
    ) {
        #if SERIAL_SIMULATION
        if SimulationRun.registerLiveness(name, withinSteps: steps, holds) { return }
        #endif
        fatalError("Simulation.eventually(\"\(name)\") called outside a simulated run")
    }

    /// What a run starts: plain code on the run's main thread, or an async scenario's task.
    private enum Scenario {
        case threads(@Sendable () -> Void)
        case tasks(@Sendable () async -> Void)
    }

    #if SERIAL_SIMULATION

    private func run(_ scheduler: SimulationScheduler, _ scenario: Scenario) -> SimulationResult {
        var limits = SimulationLimits()
        limits.maximumSteps = self.maximumSteps
        limits.recordsSteps = self.checksDeterminism
        var outcome = Self.execute(scheduler, limits: limits, taskThreads: self.taskThreads, scenario)
        if self.checksDeterminism, outcome.failure != nil {
            let again = Self.execute(
                SimulationScheduler(strategy: scheduler.strategy, seed: scheduler.seed), limits: limits,
                taskThreads: self.taskThreads, scenario)
            outcome = outcome.comparedWith(again)
        }
        let result = SimulationResult(outcome)
        if let failure = result.failure {
            SimulationRun.writeToStandardError("\(failure.report)\n\(failure.replayLine)\n")
        }
        return result
    }

    private static func execute(
        _ scheduler: SimulationScheduler, limits: SimulationLimits, taskThreads: Int, _ scenario: Scenario
    ) -> SimulationOutcome {
        switch scenario {
        case .threads(let body): return SimulationRun.execute(scheduler, limits: limits, body)
        case .tasks(let body): return SimulationRun.execute(scheduler, limits: limits, taskThreads: taskThreads, body)
        }
    }
    #endif

    private static func unavailable() -> Never {
        fatalError("""
            Simulation: this build has no simulator. Build with the package trait: \
            swift build --traits Simulation --scratch-path .build-sim
            """)
    }
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
