#if SERIAL_SIMULATION
@testable import SerialCore
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// Attack 43 on virtual time: the pool's wake of f300b91 (a watcher that steals a `next` queue
/// wakes an idle thread for the run-queue work it was counted on for), the stall watchdog's fixes
/// of 7ef66b0, and `Policy.refresh` answered once (d3d4a17). Each scenario is written from a
/// promise; the pool's invariants (work conservation as a bound, no steal before the patience)
/// are checked at every step besides what the scenario checks. The catalogue's scenarios for the
/// watchdog's fix and the answered-once guard are in `PromiseScenarios` (run here too).
enum Attack43Scenarios {
    static let boundNanoseconds: UInt64 = PostFixAttackScenarios.boundNanoseconds

    // MARK: WorkerPool (f300b91)

    /// WorkerPool: "runnable work never waits more than 5 µs while a pool thread watches …; other
    /// work made runnable while a thread is free goes to the pool's run queue at once, waking an
    /// idle thread unless a spinning one will look"; `nextPatience`: "how long a queue made
    /// runnable by a busy pool thread's own turn may wait in that thread's `next` slot before a
    /// free thread takes it".
    ///
    /// On `threads` threads (at least 5), two items x0, x1 each leave c0, c1 in their `next` slots
    /// and go on (as do c0, c1 once taken) until every y ran: so up to two free threads watch and
    /// steal, while the rest are free. From outside the pool, `ys` queues become runnable, `gap`
    /// clock reads apart, starting `delay` reads after both fills, around the patience. Every y is
    /// short; with at least one thread beyond x's and c's, each must run within the bound.
    static func runQueueBesideTwoStealers(threads: Int, ys: Int, delay: Int, gap: Int, busyReads: Bool = false) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: threads, label: "sim-a43")
            let xs = (0..<2).map { SerialQueue(label: "sim-a43-x\($0)", pool: pool) }
            let cs = (0..<2).map { SerialQueue(label: "sim-a43-c\($0)", pool: pool) }
            let yQueues = (0..<ys).map { SerialQueue(label: "sim-a43-y\($0)", pool: pool) }
            let ran = ScenarioBox(0)
            let posted = ScenarioBox(0)
            let waits = ScenarioBox([UInt64]())
            let finished = ConditionLock(0)
            // Busy without reading the clock in a loop (other threads' reads would move virtual
            // time for the ys' waits): timed waits of 10 µs on a condition nobody signals.
            @Sendable func untilEveryYRan() {
                var steps = 0
                while ran.value < ys && steps < (busyReads ? 4_000 : 400) {
                    if busyReads { _ = MonotonicInstant.now() } else { PromiseScenarios.pause(.microseconds(10)) }
                    steps += 1
                }
                finished.withLockThenBroadcast { $0 += 1 }
            }
            for index in 0..<2 {
                xs[index].async {
                    cs[index].async { untilEveryYRan() }
                    posted.value += 1
                    untilEveryYRan()
                }
            }
            var reads = 0
            while posted.value < 2 && reads < 5_000 {
                _ = MonotonicInstant.now()
                reads += 1
            }
            Simulation.check(posted.value == 2, "x's items never posted c0 and c1")
            for _ in 0..<delay { _ = MonotonicInstant.now() }
            let firstEnqueued = MonotonicInstant.now()
            for y in yQueues {
                let enqueued = MonotonicInstant.now()
                y.async {
                    waits.value.append(MonotonicInstant.now().nanoseconds &- enqueued.nanoseconds)
                    ran.value += 1
                }
                for _ in 0..<gap { _ = MonotonicInstant.now() }
            }
            // With busy reads: the pool as the main thread sees it while ys wait (run queue, idle,
            // spinning, dozing), each change with its virtual time from the first enqueue.
            var timeline: [String] = []
            if busyReads {
                var last = ""
                var looks = 0
                while ran.value < ys && looks < 2_000 {
                    let seen = pool.core.mutex.withLock {
                        "rq \(pool.core.state.runQueue.count) idle \(pool.core.state.idleWorkers.count) spin \(pool.core.state.spinningCount) doze \(pool.core.state.dozingCount) ran \(ran.value)"
                    }
                    if seen != last {
                        timeline.append("+\((MonotonicInstant.now().nanoseconds &- firstEnqueued.nanoseconds) / 1_000) µs: \(seen)")
                        last = seen
                    }
                    looks += 1
                }
            }
            let ended = finished.wait(until: .now() + .seconds(60)) { $0 == 4 ? true : nil }
            Simulation.check(ended != nil, "x's and c's items did not end within 60 s of virtual time")
            Simulation.check(
                ran.value == ys && waits.value.allSatisfy { $0 <= Self.boundNanoseconds },
                "ys waited \(waits.value.map { $0 / 1_000 }) µs of virtual time (ran \(ran.value) of \(ys)) on \(threads) threads "
                    + "beside two items that each left a next fill; the bound allowed: \(Self.boundNanoseconds / 1_000) µs; "
                    + "seen meanwhile: \(timeline)")
            for queue in xs + cs + yQueues { queue.sync {} }
        }
    }

    /// The same shape, but the run-queue work comes from a pool thread's own turn (a requeue and
    /// own-run-queue pushes): an item z on one more queue posts `ys` queues while its `next` slot
    /// is taken, so they go to its own run queue or the pool's. Promise as above, with at least one
    /// thread beyond the five long items.
    static func ownRunQueueBesideTwoStealers(threads: Int, ys: Int) -> @Sendable () -> Void {
        {
            let pool = WorkerPool(threads: threads, label: "sim-a43o")
            let xs = (0..<2).map { SerialQueue(label: "sim-a43o-x\($0)", pool: pool) }
            let cs = (0..<2).map { SerialQueue(label: "sim-a43o-c\($0)", pool: pool) }
            let z = SerialQueue(label: "sim-a43o-z", pool: pool)
            let filler = SerialQueue(label: "sim-a43o-f", pool: pool)
            let yQueues = (0..<ys).map { SerialQueue(label: "sim-a43o-y\($0)", pool: pool) }
            let ran = ScenarioBox(0)
            let posted = ScenarioBox(0)
            let waits = ScenarioBox([UInt64]())
            let finished = ConditionLock(0)
            // Busy without reading the clock in a loop (other threads' reads would move virtual
            // time for the ys' waits): timed waits of 10 µs on a condition nobody signals.
            @Sendable func untilEveryYRan() {
                var steps = 0
                while ran.value < ys && steps < 400 {
                    PromiseScenarios.pause(.microseconds(10))
                    steps += 1
                }
                finished.withLockThenBroadcast { $0 += 1 }
            }
            for index in 0..<2 {
                xs[index].async {
                    cs[index].async { untilEveryYRan() }
                    posted.value += 1
                    untilEveryYRan()
                }
            }
            var reads = 0
            while posted.value < 2 && reads < 5_000 {
                _ = MonotonicInstant.now()
                reads += 1
            }
            z.async {
                filler.async {}  // z's next slot
                for y in yQueues {
                    let enqueued = MonotonicInstant.now()
                    y.async {
                        waits.value.append(MonotonicInstant.now().nanoseconds &- enqueued.nanoseconds)
                        ran.value += 1
                    }
                }
                untilEveryYRan()
            }
            let ended = finished.wait(until: .now() + .seconds(60)) { $0 == 5 ? true : nil }
            Simulation.check(ended != nil, "the items did not end within 60 s of virtual time")
            Simulation.check(
                ran.value == ys && waits.value.allSatisfy { $0 <= Self.boundNanoseconds },
                "ys posted by z's turn waited \(waits.value.map { $0 / 1_000 }) µs (ran \(ran.value) of \(ys)) on \(threads) threads; "
                    + "the bound allowed: \(Self.boundNanoseconds / 1_000) µs")
            for queue in xs + cs + [z, filler] + yQueues { queue.sync {} }
        }
    }

    // MARK: StallWatchdog (7ef66b0)

    /// "Reports, once per stall, any queue … whose oldest waiting item has not started within
    /// `waitingThreshold`"; 7ef66b0: "the wait left is timed from the drop (a lower bound)". A
    /// sync turn S waits behind a 40 ms item (threshold 10 ms: reported); a later closure z is
    /// dropped by `shutdown(.cancelPending)`; S stays the oldest waiting item. Its one wait must be
    /// reported once. (Attack 43's finding: reported twice; see Attack43Tests.)
    static func dropBehindTheOldestItem(pooled: Bool) -> @Sendable () -> Void {
        {
            let reports = ScenarioBox([String]())
            let watchdog = StallWatchdog(
                runningThreshold: .seconds(60), waitingThreshold: .milliseconds(10), checkInterval: .milliseconds(1)
            ) { reports.value.append("\($0.kind) \($0.duration)") }
            let pool = pooled ? WorkerPool(threads: 2, label: "sim-a43-drop-pool") : nil
            let queue = pool.map { SerialQueue(label: "sim-a43-drop", pool: $0) } ?? SerialQueue(label: "sim-a43-drop")
            let caller = SerialQueue(label: "sim-a43-drop-caller")
            let stopper = SerialQueue(label: "sim-a43-drop-stopper")
            watchdog.watch(queue)
            let started = ScenarioBox(false)
            queue.async {
                started.value = true
                PromiseScenarios.pause(.milliseconds(40))
            }
            var reads = 0
            while !started.value && reads < 5_000 {
                _ = MonotonicInstant.now()
                reads += 1
            }
            caller.async { queue.sync {} }
            reads = 0
            while queue.statistics.syncWaits == 0 && reads < 5_000 {
                _ = MonotonicInstant.now()
                reads += 1
            }
            queue.async {}  // z
            PromiseScenarios.pause(.milliseconds(15))  // S's wait is reported meanwhile
            stopper.async { queue.shutdown(.cancelPending) }
            caller.sync {}
            stopper.sync {}
            watchdog.stop()
            let waiting = reports.value.filter { $0.hasPrefix("waiting") }
            Simulation.check(
                waiting.count == 1,
                "S's one wait behind the long item (\(pooled ? "pooled" : "dedicated")) was reported \(waiting.count) times: \(reports.value)")
            pool?.shutdown()
        }
    }


    // MARK: refreshSettled after the scheduler stopped, inside a run (cd62c2a)

    /// `refreshSettled(within:)`: the timeout runs "in real time once the scheduler has stopped
    /// (on a queue of this library's own, made the first time a wait outlives its scheduler ...)";
    /// ReplayableSchedules ("Users get it too"): a user's own code on the runtime runs in a
    /// simulation run. A request queue on a `SerialQueue` of the run, its refresh out and never
    /// answered; the scheduler shuts down; the wait (5 ms) must end `false`, and the run end.
    static let settleWaitAfterTheSchedulerStoppedInARun: @Sendable () async -> Void = {
        typealias Transport = CredentialLifetimeScenarios.StaleFleetTransport
        let coordination = SerialQueue(label: "sim-st-coord")
        let coordinator = LocalCredentialCoordinator<String>(scheduler: coordination, leaseDuration: .seconds(3600))
        let transport = Transport(queue: SerialQueue(label: "sim-st-server"))
        let held = ScenarioBox<[@Sendable (Result<String, any Error>) -> Void]>([])
        let start = MonotonicInstant.now()
        let policy = RequestQueue<Transport>.Policy(
            classify: { _, _ in .success },
            refresh: { _, completion in held.value.append(completion) },  // never answered
            lifetime: .init(refreshMargin: .seconds(1), retryInterval: .seconds(3600)) { token in
                start.advanced(by: token == "token-0" ? .seconds(-1) : .seconds(3600))
            })
        let scheduler = SerialQueue(label: "sim-st-queue")
        let queue = RequestQueue(
            transport: transport, credential: "token-0", policy: policy, coordinator: coordinator, scheduler: scheduler)
        queue.submit(1) { _ in }
        var rounds = 0
        while await scheduler.run({ held.value.isEmpty }) && rounds < 200 {
            await coordination.run {}
            rounds += 1
        }
        Simulation.check(rounds < 200, "the refresh never went out")
        scheduler.shutdown()
        let settled = await queue.refreshSettled(within: .milliseconds(5))
        Simulation.check(!settled, "a wait for a refresh that never answers ended true")
        held.value = []
    }
}

@Suite struct Attack43ScenarioTests {
    /// Seeds per test: 20, or `ATTACK43_SEEDS`.
    static var seedCount: UInt64 { UInt64(getenv("ATTACK43_SEEDS").flatMap { Int(String(cString: $0)) } ?? 20) }

    static func explore(_ name: String, _ scenario: @escaping @Sendable () -> Void) async -> SimulationReport {
        let report = await offThePool { Simulation(strategy: .random).explore(name, seeds: 0..<Self.seedCount, scenario) }
        print("\(name): \(report.failures.count) of \(report.results.count) schedules failed")
        return report
    }

    @Test(arguments: [(5, 2, 0, 0), (5, 3, 4, 1), (6, 3, 5, 0), (6, 4, 6, 2), (5, 2, 8, 3)])
    func runQueueWorkBesideTwoStealersWaitsNoLongerThanTheBound(threads: Int, ys: Int, delay: Int, gap: Int) async {
        let report = await Self.explore(
            "a43-stealers-\(threads)-\(ys)-\(delay)-\(gap)",
            Attack43Scenarios.runQueueBesideTwoStealers(threads: threads, ys: ys, delay: delay, gap: gap))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    /// Diagnosis: the first version of this scenario, whose long items read the clock in a loop
    /// (four threads reading: virtual time moves with every read). 3 of 20 and 5 of 20 schedules
    /// fail its 200 µs check (ys waited 235-267 µs); the pool's invariant holds at every step,
    /// and the pool as sampled meanwhile shows no idle thread while a y waited (5 threads), or an
    /// idle one beside a spinning one (6): the woken or spinning thread's own steps to the y's
    /// item (lock, dequeue, turn) each cost the four readers' reads of virtual time. Not a finding.
    @Test(.disabled(if: getenv("ATTACK43_DIAGNOSE") == nil, "diagnosis only"), arguments: [(5, 2, 0, 0), (6, 3, 5, 0)])
    func busyReadersBesideTwoStealers(threads: Int, ys: Int, delay: Int, gap: Int) async {
        let report = await Self.explore(
            "a43-busy-\(threads)-\(ys)-\(delay)-\(gap)",
            Attack43Scenarios.runQueueBesideTwoStealers(threads: threads, ys: ys, delay: delay, gap: gap, busyReads: true))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    /// At least six threads: x0, x1, c0, c1 and z's items all go on until the ys ran. (On five,
    /// 14 of 1,000 seeds "failed" the scenario's own check, ys waiting 5.9-6.0 ms: every thread
    /// ran one of those five items, none was free, the pool's invariant held: the scenario's
    /// mistake, not the pool's.)
    @Test(arguments: [(6, 2), (6, 3), (7, 3)])
    func ownRunQueueWorkBesideTwoStealersWaitsNoLongerThanTheBound(threads: Int, ys: Int) async {
        let report = await Self.explore(
            "a43-own-\(threads)-\(ys)", Attack43Scenarios.ownRunQueueBesideTwoStealers(threads: threads, ys: ys))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    /// Attack 43's finding on virtual time (see Attack43Tests): a drop behind the oldest waiting
    /// item re-times its wait, which is reported a second time.
    /// Fixed: a drop re-times the wait only when it dropped the oldest item.
    @Test(arguments: [false, true])
    func aDropBehindTheOldestItemLeavesOneReport(pooled: Bool) async {
        let report = await Self.explore("a43-drop-\(pooled ? "pooled" : "dedicated")", Attack43Scenarios.dropBehindTheOldestItem(pooled: pooled))
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test func thePooledHandOffsRestWaitsOnce() async {
        let report = await Self.explore("stall-handoff-rest-waits-once-pooled", PromiseScenarios.pooledHandOffRestWaitsOnce)
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    @Test func aRefreshAnsweredTwiceTakesTheFirstAnswer() async {
        let report = await Self.explore("refresh-answered-once", PromiseScenarios.refreshAnsweredTwiceTakesTheFirst)
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }

    /// Finding of attack 43: a `refreshSettled` wait that outlives its scheduler inside a
    /// simulation run. Its timeout goes to the library's process-wide queue (cd62c2a), made at
    /// first use, which a scenario cannot replace with one of its own (it is private), and which
    /// the limitation "Objects live within their run" (ReplayableSchedules.md) does not name.
    /// Seen, seeds 0-2, each variant in a process of its own:
    /// - `ATTACK43_SETTLE_IN_RUN=inside` (first made inside a run): seed 0's wait ends `false` at
    ///   +5 ms of virtual time, but the run fails as a deadlock: T8 "RequestQueue.refreshSettled",
    ///   the idle worker of the library's queue, outlives it; seeds 1 and 2 (later runs, same
    ///   process) fail as deadlocks with the scenario's task never finished: the queue's worker
    ///   stays parked after the first run, so no later wait of the process ever times out.
    /// - `ATTACK43_SETTLE_IN_RUN=outside` (made first by a wait outside any run, as the limitation
    ///   advises for the shared `WheelClock`): every run fails as "escaped job": the timeout
    ///   resumes the scenario's task from the library's real thread.
    /// Not under ATTACK43_REPRODUCE: it wedges the process-wide queue for the other tests of the
    /// process (any wait after a stopped scheduler would then never time out). Run it alone.
    @Test(.disabled(if: getenv("ATTACK43_SETTLE_IN_RUN") == nil, "finding of attack 43; run alone (ATTACK43_SETTLE_IN_RUN=inside or outside): it wedges the library's process-wide refreshSettled queue"))
    func aSettleWaitOutlivingItsSchedulerInARun() async {
        if String(cString: getenv("ATTACK43_SETTLE_IN_RUN")) == "outside" {
            // The library's queue made first outside any run (as the limitation's advice goes for
            // the shared WheelClock): a wait after its scheduler stopped, on real threads.
            typealias Transport = CredentialLifetimeScenarios.StaleFleetTransport
            let scheduler = VirtualScheduler()
            let start = scheduler.now
            let policy = RequestQueue<Transport>.Policy(
                classify: { _, _ in .success }, refresh: { _, _ in },
                lifetime: .init(refreshMargin: .seconds(1), retryInterval: .seconds(3600)) { token in
                    start.advanced(by: token == "token-0" ? .seconds(-1) : .seconds(3600))
                })
            let queue = RequestQueue(
                transport: Transport(queue: SerialQueue(label: "a43-outside-server")), credential: "token-0", policy: policy,
                scheduler: scheduler)
            queue.submit(1) { _ in }
            scheduler.runUntilIdle()
            scheduler.shutdown()
            let settled = await queue.refreshSettled(within: .milliseconds(1))
            print("settle outside any run: \(settled)")
        }
        let results = await offThePool { () -> [SimulationResult] in
            (0..<3).map { seed in Simulation(strategy: .random).run(seed: UInt64(seed), Attack43Scenarios.settleWaitAfterTheSchedulerStoppedInARun) }
        }
        for result in results { print("settle-in-run seed \(result.seed): \(result.failure.map { "\($0)" } ?? "passed")") }
        let failed = results.filter { !$0.passed }.map { $0.failure!.description }
        #expect(failed.isEmpty, "\(failed)")
    }
}
#endif
