#if SERIAL_SIMULATION
import SerialTesting

/// One scenario as CI and the mutant script run it: a name, a strategy, and how many seeds CI
/// gives it per unit of `SERIAL_SIMULATION_SEEDS` (long scenarios get fewer).
struct CatalogEntry: Sendable {
    let name: String
    let strategy: Simulation.Strategy
    /// Seeds per CI unit: `seedWeight * SERIAL_SIMULATION_SEEDS / 4`, at least 1.
    let seedWeight: Int
    let scenario: @Sendable () -> Void

    init(_ name: String, _ strategy: Simulation.Strategy, weight: Int = 4, _ scenario: @escaping @Sendable () -> Void) {
        self.name = name
        self.strategy = strategy
        self.seedWeight = weight
        self.scenario = scenario
    }

    func seeds(perUnit unit: Int) -> Range<UInt64> { 0..<UInt64(max(1, self.seedWeight * unit / 4)) }
}

/// Every scenario that passes on today's code, and which of them finds each mutant in
/// `Verification/simulation-mutants/` (`scripts/simulation-mutants.sh`).
enum ScenarioCatalog {
    static let all: [CatalogEntry] = [
        CatalogEntry("producers-fifo-random", .random, Scenarios.producersKeepFIFO(producers: 3, items: 4)),
        CatalogEntry("producers-fifo-pct3", .pct(depth: 3), Scenarios.producersKeepFIFO(producers: 3, items: 4)),
        CatalogEntry("async-then-sync-random", .random, Scenarios.asyncThenSync),
        CatalogEntry("async-then-sync-pct2", .pct(depth: 2), Scenarios.asyncThenSync),
        CatalogEntry("async-then-sync-pct3", .pct(depth: 3), Scenarios.asyncThenSync),
        CatalogEntry("mailbox-random", .random, Scenarios.mailbox),
        CatalogEntry("pooled-queues-random", .random, Scenarios.pooledQueues),
        CatalogEntry("pooled-queues-pct3", .pct(depth: 3), Scenarios.pooledQueues),
        CatalogEntry("work-conservation", .random, RegressionScenarios.workPostedFromATurnRunsOnAFreeThread),
        CatalogEntry("own-run-queue-stolen", .random, RegressionScenarios.workQueuedBehindNextRunsOnAFreeThread),
        CatalogEntry("next-taken-during-endless-item", .random, RegressionScenarios.nextQueueOfAnEndlessItemIsTakenByAnIdleThread),
        CatalogEntry("release-on-pool-thread", .random, RegressionScenarios.releasingADedicatedQueueOnAPoolThread),
        CatalogEntry("stop-watching-during-look", .random, weight: 1, RegressionScenarios.stopWatchingDuringALook),
        CatalogEntry("due-work-ends-hops", .random, weight: 2, RegressionScenarios.dueWorkEndsAChainOfHops),
        CatalogEntry("sync-turn-with-work-behind", .random, RegressionScenarios.syncTurnWithWorkBehindItInOneBatch),
        CatalogEntry("coordinator-one-lease", .random, RegressionScenarios.twoCallersOfOneGenerationRefreshOnce),
    ]

    /// Mutant name (its patch's file name) → the scenario that must fail on it.
    static let mutants: [String: String] = [
        "private-next": "work-conservation",
        "lost-wakeup": "async-then-sync-random",
        "release-without-blocking": "release-on-pool-thread",
        "watchdog-rearm": "stop-watching-during-look",
        "due-behind-hops": "due-work-ends-hops",
        "coordinator-ignores-lease": "coordinator-one-lease",
        "local-not-stolen": "own-run-queue-stolen",
        "next-never-stolen": "next-taken-during-endless-item",
        "next-stolen-early": "next-taken-during-endless-item",
    ]

    static func entry(named name: String) -> CatalogEntry? { Self.all.first { $0.name == name } }
}
#endif
