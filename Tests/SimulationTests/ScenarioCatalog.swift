#if SERIAL_SIMULATION
import SerialTesting

/// One scenario as CI and the mutant script run it: a name, a strategy, and how many seeds CI
/// gives it per unit of `SERIAL_SIMULATION_SEEDS` (long scenarios get fewer).
struct CatalogEntry: Sendable {
    let name: String
    let strategy: Simulation.Strategy
    /// Seeds per CI unit: `seedWeight * SERIAL_SIMULATION_SEEDS / 4`, at least 1.
    let seedWeight: Int
    /// Private: a plain closure that is empty for an async scenario; `explore`, `run` and
    /// `replay` pick the right one (the mutant hunt once ran the empty one, finding nothing).
    private let scenario: @Sendable () -> Void
    /// Set for an async scenario (then `scenario` is empty).
    private(set) var asyncScenario: (@Sendable () async -> Void)? = nil

    init(_ name: String, _ strategy: Simulation.Strategy, weight: Int = 4, _ scenario: @escaping @Sendable () -> Void) {
        self.name = name
        self.strategy = strategy
        self.seedWeight = weight
        self.scenario = scenario
    }

    init(_ name: String, _ strategy: Simulation.Strategy, weight: Int = 4, async scenario: @escaping @Sendable () async -> Void) {
        self.init(name, strategy, weight: weight) {}
        self.asyncScenario = scenario
    }

    /// Explores the scenario, plain or async, with `simulation`.
    func explore(_ simulation: Simulation, seeds: some Sequence<UInt64>) -> SimulationReport {
        if let asyncScenario = self.asyncScenario { return simulation.explore(self.name, seeds: seeds, asyncScenario) }
        return simulation.explore(self.name, seeds: seeds, self.scenario)
    }

    /// Runs the scenario, plain or async, once with `seed`.
    func run(_ simulation: Simulation, seed: UInt64) -> SimulationResult {
        if let asyncScenario = self.asyncScenario { return simulation.run(seed: seed, asyncScenario) }
        return simulation.run(seed: seed, self.scenario)
    }

    /// Replays `token` on the scenario, plain or async.
    func replay(_ token: String) -> SimulationResult {
        if let asyncScenario = self.asyncScenario { return Simulation.replay(token, asyncScenario) }
        return Simulation.replay(token, self.scenario)
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
        CatalogEntry("next-taken-after-a-doze", .random, weight: 2, RegressionScenarios.nextQueueLeftDuringADozeIsTaken),
        CatalogEntry("release-on-pool-thread", .random, RegressionScenarios.releasingADedicatedQueueOnAPoolThread),
        CatalogEntry("stop-watching-during-look", .random, weight: 1, RegressionScenarios.stopWatchingDuringALook),
        CatalogEntry("due-work-ends-hops", .random, weight: 2, RegressionScenarios.dueWorkEndsAChainOfHops),
        CatalogEntry("sync-turn-with-work-behind", .random, RegressionScenarios.syncTurnWithWorkBehindItInOneBatch),
        CatalogEntry("coordinator-one-lease", .random, RegressionScenarios.twoCallersOfOneGenerationRefreshOnce),
        // Written from the documented promises (the table in ReplayableSchedules.md). None found
        // anything on the code it was written against but pooled-due-work-in-due-order (issue 37
        // item 1, fixed since, in every schedule), so each gets the lightest weight.
        CatalogEntry("release-runs-enqueued", .random, weight: 1, P.releaseRunsEnqueuedWorkAndCancelsDelayed(pooled: false)),
        CatalogEntry("release-runs-enqueued-pooled", .random, weight: 1, P.releaseRunsEnqueuedWorkAndCancelsDelayed(pooled: true)),
        CatalogEntry("shutdown-accounts-cancel-pending", .random, weight: 1, P.shutdownAccountsForEveryItem(.cancelPending, pooled: false)),
        CatalogEntry("shutdown-accounts-drain-pooled", .random, weight: 1, P.shutdownAccountsForEveryItem(.drain, pooled: true)),
        CatalogEntry("delayed-never-early-cancel-once", .random, weight: 1, P.delayedWorkNeverEarlyAndCancelledOrRunOnce),
        CatalogEntry("when-shut-down-once", .random, weight: 1, P.whenShutDownRunsEachHandlerOnce),
        CatalogEntry("bounded-queue-waits-for-room", .random, weight: 1, P.boundedQueueWaitsForRoom),
        CatalogEntry("stall-reported-watched-any-time", .random, weight: 1, P.stallWatchdogReportsAQueueWatchedAtAnyMoment),
        CatalogEntry("stall-waiting-behind-long-item", .random, weight: 1, P.stallWatchdogReportsAnItemWaitingBehindALongOne(pooled: false)),
        CatalogEntry("stall-waiting-behind-long-item-pooled", .random, weight: 1, P.stallWatchdogReportsAnItemWaitingBehindALongOne(pooled: true)),
        CatalogEntry("watch-racing-stop-watching", .random, weight: 1, P.stallWatchdogReportsAQueueWhoseWatchRacedStopWatching),
        // The waits a queue does not time (issue 39: most hops read no clock): a watchdog's look times them.
        CatalogEntry("stall-untimed-wait-reported", .random, weight: 1, P.stallWatchdogReportsAnUntimedWait(pooled: false)),
        // Attack 43's finding (fixed): a drop behind the oldest waiting item re-timed its wait.
        CatalogEntry("stall-drop-behind-oldest-once", .random, weight: 1, Attack43Scenarios.dropBehindTheOldestItem(pooled: true)),
        // Attack 44's findings (fixed): an untimed batch's rest was timed from its return; due work
        // did not wake a watchdog asleep armed on its queue.
        CatalogEntry(
            "untimed-rest-returned-stays-untimed", .random, weight: 1,
            Attack44Scenarios.returnedRestOfAnUntimedBatch(pooled: true, via: .syncHandOff)),
        CatalogEntry("stall-due-work-busy-pool-reported", .random, weight: 1, Attack44Scenarios.dueWorkWaitingForABusyPoolIsReported),
        CatalogEntry("stall-untimed-wait-reported-pooled", .random, weight: 1, P.stallWatchdogReportsAnUntimedWait(pooled: true)),
        CatalogEntry("pooled-due-work-in-due-order", .random, weight: 1, P.pooledDueWorkRunsInDueOrder),
        CatalogEntry("pooled-turns-bounded", .random, weight: 1, P.pooledTurnsAreBounded),
        CatalogEntry("timers-fire-in-window", .random, weight: 1, P.timersFireInTheirWindow),
        CatalogEntry("repeating-timer-keeps-grid", .random, weight: 1, P.repeatingTimerKeepsItsGridWithoutBursts),
        CatalogEntry("timer-cancel-reschedule-race", .random, weight: 1, P.timerCancelOrRescheduleRacingTheFireFiresOnce),
        CatalogEntry("timers-stop-ends-each-once", .random, weight: 1, P.timersEndOnceWhenTheServiceEnds(byQueueShutdown: false)),
        CatalogEntry("timers-queue-shutdown-ends-each-once", .random, weight: 1, P.timersEndOnceWhenTheServiceEnds(byQueueShutdown: true)),
        CatalogEntry("timeout-one-outcome", .random, weight: 1, P.timeoutManagerDeliversOneOutcome(shutdownRacing: false)),
        CatalogEntry("timeout-one-outcome-shutdown", .random, weight: 1, P.timeoutManagerDeliversOneOutcome(shutdownRacing: true)),
        CatalogEntry("deadline-outcome-by-cancel-time", .random, weight: 1, async: P.deadlineOutcomeFollowsWhenTheCallerWasCancelled),
        CatalogEntry("countdown-ends-once", .random, weight: 1, P.countdownsEndExactlyOnce(shutdownRacing: false)),
        CatalogEntry("countdown-ends-once-shutdown", .random, weight: 1, P.countdownsEndExactlyOnce(shutdownRacing: true)),
        CatalogEntry("poller-one-outcome", .random, weight: 1, P.pollerDeliversOneOutcome),
        CatalogEntry("requests-complete-once", .random, weight: 1, P.requestsCompleteExactlyOnce(shutdownRacing: false)),
        CatalogEntry("requests-complete-once-shutdown", .random, weight: 1, P.requestsCompleteExactlyOnce(shutdownRacing: true)),
        CatalogEntry(
            "stale-fleet-refreshes-once", .random, weight: 2, CredentialLifetimeScenarios.staleFleetRefreshesOncePerGeneration),
        CatalogEntry(
            "refresh-out-at-shutdown-published", .random, weight: 1,
            async: CredentialLifetimeScenarios.refreshOutAtShutdownIsPublishedBeforeTheWaitEnds),
        // The attack of 2026-11-29 (attack42): a thread that watched and stole a `next` queue left
        // run-queue work that had counted on it (fixed in f300b91; 45 of 100 seeds failed before).
        CatalogEntry(
            "blocking-hops-three-threads", .random, weight: 1, PostFixAttackScenarios.blockingSyncInsideHops(threads: 3)),
        // Attack 43 (2026-11-29): the two fixes of that day without a scenario, each written from
        // the fix's promise (both pass every schedule on the fixed code).
        CatalogEntry("stall-handoff-rest-waits-once-pooled", .random, weight: 1, P.pooledHandOffRestWaitsOnce),
        CatalogEntry("refresh-answered-once", .random, weight: 1, P.refreshAnsweredTwiceTakesTheFirst),
        CatalogEntry("async-jobs-on-the-run-random", .random, weight: 1, async: AsyncScenarios.everyKindOfJob),
        CatalogEntry("hop-chain-yields", .random, weight: 1, LivenessScenarios.hopChainYields),
        // A returning `sync` body passes the queue to the caller next in the FIFO (issue 39).
        CatalogEntry("sync-pass-fifo-order", .random, weight: 1, SyncHandOffScenarios.aReturningBodyPassesInFIFOOrder(pooled: false)),
        CatalogEntry("sync-pass-fifo-order-pooled", .random, weight: 1, SyncHandOffScenarios.aReturningBodyPassesInFIFOOrder(pooled: true)),
        CatalogEntry("sync-pass-leaves-batch-first", .random, weight: 1, SyncHandOffScenarios.aReturningBodyLeavesTheWorkersBatchFirst),
        CatalogEntry("sync-pass-wakes-a-sleeper-pooled", .random, weight: 1, SyncHandOffScenarios.aReturningBodyWakesTheCallerItPassesTo(pooled: true)),
        // Attack 46's finding (fixed): a pass that empties a bounded FIFO left a producer waiting for room asleep.
        CatalogEntry("sync-pass-makes-room-pooled", .random, weight: 1, Attack46Scenarios.aPassMakesRoomForAWaitingProducer(pooled: true)),
        // Attack 45's findings (fixed in 5032c24, bdbb634, dfb9b7b): a pooled hand-off that returned
        // nothing timed the FIFO's items from the batch; a pooled queue suspended before `asyncAfter`
        // never let its due work enter the FIFO; a running stall at the count of an earlier reported
        // stretch, after an idle spell, was never reported.
        CatalogEntry(
            "stall-wait-behind-empty-handoff-pooled", .random, weight: 1, Attack45Scenarios.waitBehindAHandOffThatReturnsNothing),
        CatalogEntry(
            "stall-due-work-suspended-first-pooled", .random, weight: 1,
            Attack45Scenarios.dueWorkOnAPooledQueueSuspendedBeforeItWasScheduled),
        CatalogEntry(
            "stall-running-again-at-reported-count", .random, weight: 1,
            Attack45Scenarios.runningStallAgainAtTheReportedCount(pooled: false)),
    ]
    private typealias P = PromiseScenarios

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
        "doze-without-deadline": "next-taken-after-a-doze",
        "countdown-called-after-cancel": "countdown-ends-once",
        "request-drain-once": "requests-complete-once",
        "due-work-lifo": "pooled-due-work-in-due-order",
        "deadline-cancelled-caller": "deadline-outcome-by-cancel-time",
        "watchdog-watch-during-look": "stall-reported-watched-any-time",
        "watchdog-batch-not-waiting": "stall-waiting-behind-long-item",
        "watchdog-late-disarm": "watch-racing-stop-watching",
        "settled-before-publish": "refresh-out-at-shutdown-published",
        "stealer-leaves-run-queue": "blocking-hops-three-threads",
        "watchdog-untimed-wait-unseen": "stall-untimed-wait-reported",
        "watchdog-drop-retimes-oldest": "stall-drop-behind-oldest-once",
        "untimed-rest-timed-from-return": "untimed-rest-returned-stays-untimed",
        "due-work-leaves-watchdog-asleep": "stall-due-work-busy-pool-reported",
        "watchdog-handoff-rest-rewaits": "stall-handoff-rest-waits-once-pooled",
        "refresh-answered-twice": "refresh-answered-once",
        "sync-pass-while-suspended": "sync-pass-fifo-order-pooled",
        "sync-pass-ahead-of-batch": "sync-pass-leaves-batch-first",
        "sync-pass-without-signal": "sync-pass-wakes-a-sleeper-pooled",
        "sync-pass-leaves-room-waiters": "sync-pass-makes-room-pooled",
        "handoff-empty-return-times-from-batch": "stall-wait-behind-empty-handoff-pooled",
        "suspended-pooled-due-work-unarmed": "stall-due-work-suspended-first-pooled",
        "running-stall-count-kept-while-idle": "stall-running-again-at-reported-count",
    ]

    static func entry(named name: String) -> CatalogEntry? { Self.all.first { $0.name == name } }
}
#endif
