#if SERIAL_SIMULATION
import Foundation
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// Attacks on `SimulationDefaultExecutor` (5e5bfc9): the process's default executor, replaced once
/// before the first async run, routes an active run's jobs to the run and the rest to Dispatch.
/// Promises attacked (ReplayableSchedules.md, "Sleeps are virtual" and "Escapes"): every sleep of a
/// task on the run's threads waits on virtual time wherever the task runs; a job of a run's task
/// enqueued from outside ends the run as `escaped job` and never runs; jobs of tasks the run never
/// saw go to the platform's executor; runs are deterministic and replay.
@Suite(.serialized) struct DefaultExecutorAttackTests {
    typealias Attack = AsyncSimulationAttackTests

    /// Runs `scenario` with each seed twice and replays the first run: the failures, and the
    /// seeds whose second run or replay differs from the first (trace hash, steps, report, virtual time).
    static func sweepTwiceAndReplay(
        _ seeds: Range<UInt64>, taskThreads: Int = 2, _ scenario: @escaping @Sendable () async -> Void
    ) -> (outcomes: [SimulationOutcome], failures: [String], diverged: [String]) {
        let first = Attack.sweep(seeds, taskThreads: taskThreads, scenario)
        let second = Attack.sweep(seeds, taskThreads: taskThreads, scenario)
        var diverged: [String] = []
        for (a, b) in zip(first, second) where !Attack.same(a, b) {
            diverged.append("seed \(a.token): second run hash \(b.traceHash) vs \(a.traceHash), virtual \(b.virtualNanoseconds) vs \(a.virtualNanoseconds), \(b.failure?.kind.rawValue ?? "passed")")
        }
        for a in first.prefix(3) {
            let r = Attack.replay(a, taskThreads: taskThreads, scenario)
            if !Attack.same(a, r) { diverged.append("replay of \(a.token): \(r.failure?.message.prefix(200) ?? "hash \(r.traceHash) vs \(a.traceHash)")") }
        }
        return (first, Attack.failures(first), diverged)
    }

    // MARK: Every kind of sleep, in every place that reaches the default executor

    /// Promise ("Sleeps are virtual", wherever the task runs): `Task.sleep(for:)`, with a
    /// tolerance, `Task.sleep(until:)` on `ContinuousClock` and `SuspendingClock`,
    /// `SuspendingClock().sleep(for:)`, `Task.sleep(nanoseconds:)`, the deprecated
    /// `Task.sleep(_:)`, zero and negative sleeps; in a `Task {}` on a default actor, in a
    /// `Task.detached` on a default actor, under `withTaskExecutorPreference(globalConcurrentExecutor)`,
    /// and in a task group's children on default actors: each waits at least what it asked on
    /// virtual time (and less than 2 s more), the code after it runs inside the run, and the same
    /// seed gives the same run twice and on replay.
    @Test(arguments: DefaultExecutorScenarios.places)
    func everySleepKindIsVirtualInEveryPlace(place: String) async {
        let counter = DefaultExecutorCounter()
        let result = await offThePool {
            Self.sweepTwiceAndReplay(0..<3, DefaultExecutorScenarios.everySleepKind(in: place, woke: counter))
        }
        #expect(result.failures.isEmpty, "\(place): \(result.failures)")
        #expect(result.diverged.isEmpty, "\(place): \(result.diverged)")
        // 3 seeds, twice, plus 3 replays, each kind once per run.
        let expected = 9 * DefaultExecutorScenarios.kinds.count
        let ran = counter.value.load(ordering: .acquiring)
        #expect(ran == expected, "\(place): the code after the sleep ran \(ran) times inside the runs, expected \(expected)")
    }

    /// Promise (same): task group children that sleep different times on the default-executor
    /// path, and an `AsyncStream` whose producer is a `Task.detached` sleeping on a default actor
    /// between elements: the consumer sees every element, in order, after at least the sum of
    /// the producer's sleeps of virtual time; deterministic and replayed.
    @Test(arguments: ["group of sleepers", "stream with sleeping producer"])
    func groupsAndStreamsOfSleepersAreVirtual(name: String) async {
        let scenario = name == "group of sleepers" ? DefaultExecutorScenarios.groupOfSleepers : DefaultExecutorScenarios.streamWithSleepingProducer
        let result = await offThePool { Self.sweepTwiceAndReplay(0..<6, scenario) }
        #expect(result.failures.isEmpty, "\(name): \(result.failures)")
        #expect(result.diverged.isEmpty, "\(name): \(result.diverged)")
    }

    // MARK: Cancellation

    /// Promise (same, and the runtime-callback rule): cancelling, from another task of the run,
    /// a task sleeping on the default-executor path ("sleep until cancelled": `.max` nanoseconds,
    /// `.seconds(Int64.max)`, 1,000 years until an instant; 10 s racing a cancel at 10 s) ends
    /// the sleep at once in virtual time (the cancel comes 1 ms in), the run passes, and the same
    /// seed gives the same run twice and on replay.
    @Test(arguments: DefaultExecutorScenarios.cancelledIdioms)
    func cancellingASleepOnTheDefaultExecutorEndsItAtOnce(idiom: String) async {
        let result = await offThePool { Self.sweepTwiceAndReplay(0..<4, DefaultExecutorScenarios.cancelledSleep(idiom)) }
        #expect(result.failures.isEmpty, "\(idiom): \(result.failures)")
        #expect(result.diverged.isEmpty, "\(idiom): \(result.diverged)")
    }

    /// Promise (same): a long sleep that is never cancelled (100 years, on the default-executor
    /// path) waits its whole length on virtual time, and the run passes.
    @Test func aCenturySleepOnTheDefaultExecutorIsVirtual() async {
        let result = await offThePool { Self.sweepTwiceAndReplay(0..<2, DefaultExecutorScenarios.centurySleep) }
        #expect(result.failures.isEmpty, "\(result.failures)")
        #expect(result.diverged.isEmpty, "\(result.diverged)")
        #expect(result.outcomes.allSatisfy { $0.virtualNanoseconds >= 100 * 365 * 86_400 * 1_000_000_000 },
            "virtual time \(result.outcomes.map(\.virtualNanoseconds))")
    }

    // MARK: Escapes through the default executor

    /// Promise ("Escapes"): a task of the run under `withTaskExecutorPreference(globalConcurrentExecutor)`
    /// (its jobs go to the default executor directly, not through the runtime's hook) awaits a
    /// continuation resumed from a thread of its own: the run ends as `escaped job`, and the code
    /// after the resume never runs, not even after the run.
    @Test func aResumeFromOutsideIntoTheGlobalExecutorPreferenceEndsTheRunAsEscaped() async throws {
        var kinds: [String] = []
        for wait: UInt32 in [20_000, 200_000] {
            let ranAfter = OutsideFlag()
            let result = await offThePool {
                Simulation(strategy: .random).run(seed: 0, DefaultExecutorScenarios.resumedFromOutsideUnderGlobalPreference(after: wait, ranAfter: ranAfter))
            }
            try await Task.sleep(for: .milliseconds(300))  // real time: a job that ran unseen would have run by now
            let ran = ranAfter.value.load(ordering: .acquiring)
            kinds.append("\(result.failure?.kind ?? "passed") (ran: \(ran))")
            if result.failure?.kind == "escaped job" {
                #expect(!ran, "the escaped job ran after all")
                return
            }
        }
        Issue.record("not escaped: \(kinds)")
    }

    /// Promise ("a task inside `withTaskExecutorPreference(globalConcurrentExecutor)`" sleeps on
    /// virtual time and runs on the run's threads): the executor value read before the process's
    /// first async run (a service built by an earlier test, a stored default) is the platform's
    /// Dispatch executor, which the swap does not replace: `SimulationDefaultExecutor.platform`
    /// is that very object (`Task.defaultExecutor` read at the install, which
    /// `globalConcurrentExecutor` returned until then). A `Task.detached` of the run preferring
    /// it, sleeping 100 ms.
    /// Reproduced 3 of 3 seeds: a deadlock at virtual +2 µs (the sleep's wake-up went to
    /// Dispatch's timer), and the code after the sleep ran later on a Dispatch thread, unseen.
    @Test(.disabled(if: getenv("ATTACK38B_REPRODUCE") == nil,
        "reproduces: a globalConcurrentExecutor value read before the first async run is Dispatch's: a run's task preferring it runs and sleeps outside the run"))
    func aGlobalExecutorReadBeforeTheFirstRunStillRunsInsideTheRun() async throws {
        _ = await offThePool { Simulation(strategy: .random).run(seed: 0) { () async in } }  // the install has happened
        let installed = try #require(globalConcurrentExecutor as? SimulationDefaultExecutor, "globalConcurrentExecutor is \(type(of: globalConcurrentExecutor))")
        let readBefore = installed.platform
        let woke = OutsideFlag()
        let results = await offThePool {
            (0..<UInt64(3)).map { seed in
                Simulation(strategy: .random).run(seed: seed) {
                    let start = MonotonicInstant.now()
                    await Task.detached {
                        await withTaskExecutorPreference(readBefore) {
                            try? await Task.sleep(for: .milliseconds(100))
                            woke.value.store(true, ordering: .releasing)
                        }
                    }.value
                    let slept = start.duration(to: .now())
                    Simulation.check(slept >= .milliseconds(100), "slept \(slept) of virtual time")
                }
            }
        }
        let kinds = results.map { $0.failure?.kind ?? "passed" }
        #expect(kinds.allSatisfy { $0 == "passed" }, "\(kinds): \(results.first { !$0.passed }?.failure?.report.prefix(400) ?? "")")
        if !kinds.allSatisfy({ $0 == "passed" }) {
            try await Task.sleep(for: .milliseconds(300))  // real time: a wake-up on Dispatch would have run by now
            let ranUnseen = woke.value.load(ordering: .acquiring)
            #expect(!ranUnseen, "the code after the sleep ran after the failed runs, on a Dispatch thread, unseen")
        }
    }

    // MARK: Tasks the run never saw; ordinary async code beside the runs

    /// Promise ("jobs of tasks the run never saw go to the platform executor"; the default
    /// executor "with no run active only forwards"): tasks started before the runs and from a
    /// thread of the test while async runs go on back to back (sleeping 3 ms in a plain `Task {}`,
    /// on a default actor, under `globalConcurrentExecutor`, with `Task.sleep(nanoseconds:)`) keep
    /// running on real time: no sleep ends before its real time, every task finishes, some sleeps
    /// end while a run is active, and every run passes.
    /// Runs with `SERIAL_SIMULATION_OUTSIDE_TASKS=1` only: its outside tasks can change where
    /// other suites' runs end (see "Determinism beside other async code" in the article), and
    /// the suites of this target run side by side.
    @Test(.enabled(if: getenv("SERIAL_SIMULATION_OUTSIDE_TASKS") != nil))
    func tasksOutsideTheRunsSleepOnRealTimeWhileRunsGoOn() async {
        let (outside, feeder, runs) = await Self.runsBesideOutsideTasks(rounds: 2)
        #expect(Attack.failures(runs.beside).isEmpty, "beside outside tasks: \(Attack.failures(runs.beside))")
        let finished = await eventually(timeout: .seconds(30)) { feeder.done.value.load(ordering: .acquiring) && outside.allFinished }
        #expect(finished, "outside tasks: started \(outside.started.load(ordering: .relaxed)), finished \(outside.finished.load(ordering: .relaxed)), feeder done \(feeder.done.value.load(ordering: .relaxed))")
        let short = outside.tooShort.load(ordering: .acquiring)
        #expect(short == 0, "\(short) outside sleeps ended before their real time (virtual, or not slept at all)")
        let during = outside.sleptDuringRuns.load(ordering: .acquiring)
        #expect(during > 0, "no outside sleep ended while a run was active: the attack did not overlap the runs")
        print("attack38b outside: \(outside.finished.load(ordering: .relaxed)) outside tasks finished, \(during) sleeps ended while a run was active, \(runs.differing) of \(runs.beside.count) runs differ from alone")
    }

    /// Promise ("runs are deterministic (same seed, same trace)"; jobs of tasks the run never saw
    /// stay out of it): the same runs, with the same seeds, beside ordinary async code of the
    /// process (tasks of other tests) have the trace they have alone.
    /// Here the outside work is heavier: the feeder's tasks, plus a thread starting tasks that
    /// yield 20 times and one starting short-lived pthreads; 1,200 runs.
    /// Reproduced 6 of 6 invocations (4 to 14 of 1,200 runs differ): each differing run passed
    /// with the same virtual time and 14 scheduling points fewer or more; compared step by step
    /// (recorded steps), the two traces are equal until the shorter run ends, and the other run's
    /// main thread T0 runs the 14 more. Also with a scenario that only
    /// does `await Task.yield()` (143 vs 157 points, 1 of 3 invocations), and, in a first probe,
    /// with 5e5bfc9's source changes reverted (hooks only): the end of every async run depends
    /// on ordinary async code of the process; not new in 5e5bfc9. Not seen in 2,400 runs with
    /// no outside work, nor with only pthread churn or only CPU-burning threads.
    @Test(.disabled(if: getenv("ATTACK38B_REPRODUCE") == nil,
        "reproduces: async runs beside ordinary tasks of the process are not deterministic: some end 14 scheduling points earlier"))
    func runsBesideOutsideTasksHaveTheTraceTheyHaveAlone() async {
        let stop = OutsideFlag()
        Thread.detachNewThread {
            while !stop.value.load(ordering: .acquiring) {
                Task { for _ in 0..<20 { await Task.yield() } }
                usleep(300)
            }
        }
        Thread.detachNewThread {
            while !stop.value.load(ordering: .acquiring) {
                var thread = pthread_t()
                if pthread_create(&thread, nil, { _ in usleep(100); return nil }, nil) == 0 { pthread_detach(thread) }
                usleep(300)
            }
        }
        let (_, feeder, runs) = await Self.runsBesideOutsideTasks(rounds: 300)
        stop.value.store(true, ordering: .releasing)
        _ = await eventually(timeout: .seconds(30)) { feeder.done.value.load(ordering: .acquiring) }
        #expect(Attack.failures(runs.alone).isEmpty, "alone: \(Attack.failures(runs.alone))")
        #expect(runs.differing == 0, "\(runs.differing) of \(runs.beside.count) runs beside outside tasks differ from the same seed alone: \(runs.details)")
    }

    struct BesideRuns: Sendable {
        let alone: [SimulationOutcome]
        let beside: [SimulationOutcome]
        var differing: Int { self.details.count }
        let details: [String]
    }

    /// `referenceRun` with seeds 0..<4 alone, then `rounds` times each beside outside tasks
    /// (`tasksBefore` started before, one more every 2 ms from a thread of the test while the runs last).
    static func runsBesideOutsideTasks(rounds: Int, tasksBefore: Int = 6) async -> (DefaultExecutorOutsideWork, DefaultExecutorFeeder, BesideRuns) {
        let outside = DefaultExecutorOutsideWork()
        let alone = await offThePool { (0..<UInt64(4)).map { Attack.sweep($0..<($0 + 1), DefaultExecutorScenarios.referenceRun)[0] } }
        outside.start(tasksBefore: tasksBefore)
        let stopFeeding = OutsideFlag()
        let feeder = DefaultExecutorFeeder(outside: outside, stop: stopFeeding)
        Thread.detachNewThread { feeder.run() }
        let beside = await offThePool { () -> [SimulationOutcome] in
            (0..<rounds).flatMap { _ in (0..<UInt64(4)).map { Attack.sweep($0..<($0 + 1), DefaultExecutorScenarios.referenceRun)[0] } }
        }
        stopFeeding.value.store(true, ordering: .releasing)
        let details = beside.enumerated().compactMap { index, run -> String? in
            let reference = alone[index % 4]
            guard !Attack.same(run, reference) else { return nil }
            return "run \(index), seed \(index % 4): steps \(run.steps) vs \(reference.steps) alone, virtual \(run.virtualNanoseconds) vs \(reference.virtualNanoseconds), \(run.failure?.kind.rawValue ?? "passed")"
        }
        return (outside, feeder, BesideRuns(alone: alone, beside: beside, details: details))
    }

    // MARK: A failed run while tasks sleep; the next run

    /// Promise ("When the run ends", determinism): a run that fails while its tasks sleep on the
    /// default-executor path (a failed check, an escaped job, a deadlock with sleepers still
    /// pending on a never-ending sleep) leaves nothing behind: the next run's trace is the one it
    /// has alone, with each of 2 seeds.
    @Test(arguments: ["check", "escaped", "deadlock"])
    func aRunFailingWhileTasksSleepLeavesTheNextRunUnchanged(how: String) async {
        let (alone, failed, after) = await offThePool { () -> ([SimulationOutcome], [SimulationOutcome], [SimulationOutcome]) in
            let alone = (0..<UInt64(2)).map { Attack.sweep($0..<($0 + 1), DefaultExecutorScenarios.referenceRun)[0] }
            var failed: [SimulationOutcome] = []
            var after: [SimulationOutcome] = []
            for seed in 0..<UInt64(2) {
                failed.append(Attack.sweep(seed..<(seed + 1), DefaultExecutorScenarios.failingWhileSleeping(how))[0])
                after.append(Attack.sweep(seed..<(seed + 1), DefaultExecutorScenarios.referenceRun)[0])
            }
            return (alone, failed, after)
        }
        let expected: SimulationFailure.Kind = how == "check" ? .check : how == "escaped" ? .escaped : .deadlock
        #expect(failed.allSatisfy { $0.failure?.kind == expected }, "\(how): \(failed.map { "\($0.failure?.kind.rawValue ?? "passed"): \($0.failure?.message.prefix(200) ?? "")" })")
        #expect(Attack.failures(alone).isEmpty, "\(Attack.failures(alone))")
        #expect(zip(alone, after).allSatisfy { Attack.same($0, $1) }, "\(how): after a failed run \(Attack.failures(after)), hashes \(after.map(\.traceHash)) vs alone \(alone.map(\.traceHash))")
    }

    // MARK: Deadlines on Swift's clocks

    /// Promise ("runs are deterministic (same seed, same trace)", "every sleep waits on the run's
    /// virtual time"): a deadline taken on `ContinuousClock` before some work of the scenario that
    /// costs real time (here 20 `usleep(200)`, 4 to 6 ms, standing for any slow code), then
    /// `Task.sleep(until: deadline)`, in the scenario's task and on a default actor. Either executor measures the
    /// deadline against the real clock when the sleep starts, so the virtual time slept is
    /// 200 ms minus however much real time the work took that time, rounded to 1 ms: two runs of
    /// the same seed sleep different virtual times and have different traces.
    /// Reproduced on a default actor 10 of 10 invocations (2 traces in 8 runs of seed 0: 194 and
    /// 195 ms of virtual time), in the scenario's task 1 of 10.
    /// Not new in 5e5bfc9 (the run's own executor rounds the same way); the article promises
    /// repeatability for `Task.sleep(for:)` only, and says a preempted thread breaks it.
    @Test(.disabled(if: getenv("ATTACK38B_REPRODUCE") == nil,
        "reproduces: Task.sleep(until:) of a ContinuousClock deadline taken before slow work sleeps a real-time-dependent virtual time (nondeterministic runs)"),
        arguments: ["default actor", "scenario task"])
    func aDeadlineTakenBeforeSlowWorkSleepsTheSameVirtualTimeEveryRun(place: String) async {
        let outcomes = await offThePool { (0..<8).map { _ in Attack.sweep(0..<1, DefaultExecutorScenarios.deadlineAfterSlowWork(place))[0] } }
        #expect(Attack.failures(outcomes).isEmpty, "\(place): \(Attack.failures(outcomes))")
        let hashes = Set(outcomes.map(\.traceHash))
        let virtual = Set(outcomes.map(\.virtualNanoseconds))
        #expect(hashes.count == 1 && virtual.count == 1,
            "\(place): 8 runs of seed 0 gave \(hashes.count) traces and \(virtual.count) virtual times: \(virtual.sorted().map { Duration.nanoseconds($0) })")
    }

    /// Promise ("every sleep waits on the run's virtual time"): a deadline 100 ms ahead on
    /// `ContinuousClock`, then a virtual sleep of 1 s, then `Task.sleep(until: deadline)`: on the
    /// run's time the deadline has passed, so that sleep must return at once.
    /// Reproduced 3 of 3 seeds, every invocation (it waits 98 to 100 ms). As documented ("Swift's
    /// own clocks": `ContinuousClock.now` reads the kernel; the executor measures an instant
    /// against the real `now`): a limitation, not new in 5e5bfc9.
    @Test(.disabled(if: getenv("ATTACK38B_REPRODUCE") == nil,
        "reproduces: Task.sleep(until:) of a ContinuousClock deadline already past in virtual time still waits (real-time deadline)"))
    func aDeadlinePassedInVirtualTimeDoesNotWait() async {
        let outcomes = await offThePool { Attack.sweep(0..<3, DefaultExecutorScenarios.deadlinePassedInVirtualTime) }
        #expect(Attack.failures(outcomes).isEmpty, "\(Attack.failures(outcomes))")
    }
}

// MARK: - Scenarios

enum DefaultExecutorScenarios {
    static let places = ["Task {} on a default actor", "Task.detached on a default actor", "global executor preference", "group children on default actors"]
    static let kinds = ["for", "for with tolerance", "until continuous", "until suspending", "SuspendingClock.sleep", "nanoseconds", "deprecated UInt64", "zero", "negative"]

    /// What each kind asks (virtual time it must wait at least).
    static func asked(_ kind: String) -> Duration {
        switch kind {
        case "zero", "negative": .zero
        default: .seconds(10)
        }
    }

    /// Sleeps as `kind` says, on the caller's isolation (a default actor's, when called from one).
    static func sleep(_ kind: String, isolation: isolated (any Actor)? = #isolation) async {
        let ten = Duration.seconds(10)
        switch kind {
        case "for": try? await Task.sleep(for: ten)
        case "for with tolerance": try? await Task.sleep(for: ten, tolerance: .seconds(1))
        case "until continuous": try? await Task.sleep(until: .now + ten, clock: .continuous)
        case "until suspending": try? await Task.sleep(until: SuspendingClock.now + ten, clock: .suspending)
        case "SuspendingClock.sleep": try? await SuspendingClock().sleep(for: ten)
        case "nanoseconds": try? await Task.sleep(nanoseconds: 10_000_000_000)
        case "deprecated UInt64": await Task.sleep(10_000_000_000)
        case "zero": try? await Task.sleep(for: .zero)
        case "negative": try? await Task.sleep(for: .milliseconds(-100))
        default: fatalError("unknown kind \(kind)")
        }
    }

    /// One sleep of `kind` in `place`, timed on virtual time; `woke` counts the code after it.
    static func timedSleep(_ kind: String, in place: String, woke: DefaultExecutorCounter) async {
        let start = MonotonicInstant.now()
        let actor = DefaultExecutorSleepyActor()
        switch place {
        case "Task {} on a default actor":
            await Task { await actor.sleep(kind, woke: woke) }.value
        case "Task.detached on a default actor":
            await Task.detached { await actor.sleep(kind, woke: woke) }.value
        case "global executor preference":
            await Task.detached {
                await withTaskExecutorPreference(globalConcurrentExecutor) {
                    await Self.sleep(kind)
                    woke.value.add(1, ordering: .relaxed)
                }
            }.value
        default:  // group children on default actors: two children, one sleeping, one not
            await Task.detached {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await actor.sleep(kind, woke: woke) }
                    group.addTask { await DefaultExecutorSleepyActor().touch() }
                }
            }.value
        }
        let slept = start.duration(to: .now())
        let asked = Self.asked(kind)
        Simulation.check(slept >= asked && slept < asked + .seconds(2), "\(kind) in \(place): slept \(slept) of virtual time, asked \(asked)")
    }

    static func everySleepKind(in place: String, woke: DefaultExecutorCounter) -> @Sendable () async -> Void {
        {
            for kind in Self.kinds { await Self.timedSleep(kind, in: place, woke: woke) }
        }
    }

    /// Three children under the global executor preference and on default actors, sleeping 1, 2
    /// and 3 s; the group ends after at least 3 s and less than 4 s of virtual time.
    static let groupOfSleepers: @Sendable () async -> Void = {
        let start = MonotonicInstant.now()
        let total = await Task.detached { () -> Int in
            await withTaskGroup(of: Int.self) { group in
                for seconds in 1...3 {
                    group.addTask {
                        if seconds == 2 {
                            await withTaskExecutorPreference(globalConcurrentExecutor) { try? await Task.sleep(for: .seconds(seconds)) }
                        } else {
                            await DefaultExecutorSleepyActor().sleepFor(.seconds(seconds))
                        }
                        return seconds
                    }
                }
                return await group.reduce(0, +)
            }
        }.value
        let slept = start.duration(to: .now())
        Simulation.check(total == 6, "children returned \(total)")
        Simulation.check(slept >= .seconds(3) && slept < .seconds(4), "a group of 1, 2 and 3 s sleepers took \(slept) of virtual time")
    }

    /// A producer `Task.detached` that sleeps 1 s on a default actor before each of 5 elements.
    static let streamWithSleepingProducer: @Sendable () async -> Void = {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let start = MonotonicInstant.now()
        let actor = DefaultExecutorSleepyActor()
        Task.detached {
            for value in 0..<5 {
                await actor.sleepFor(.seconds(1))
                continuation.yield(value)
            }
            continuation.finish()
        }
        var seen: [Int] = []
        for await value in stream { seen.append(value) }
        let slept = start.duration(to: .now())
        Simulation.check(seen == [0, 1, 2, 3, 4], "the consumer saw \(seen)")
        Simulation.check(slept >= .seconds(5) && slept < .seconds(6), "5 sleeps of 1 s took \(slept) of virtual time")
    }

    static let cancelledIdioms = [
        "default actor, nanoseconds max", "default actor, seconds Int64.max", "default actor, 1000 years until",
        "global preference, nanoseconds max", "global preference, seconds Int64.max", "global preference, 1000 years until",
        "default actor, 10 s racing a cancel at 10 s",
    ]

    /// A `Task.detached` sleeping as `idiom` says, cancelled 1 ms (or 10 s) in by the scenario's task.
    static func cancelledSleep(_ idiom: String) -> @Sendable () async -> Void {
        {
            let actor = DefaultExecutorSleepyActor()
            let racing = idiom.contains("racing")
            let start = MonotonicInstant.now()
            let sleeper = Task.detached { () -> (threw: Bool, at: Duration) in
                let threw: Bool
                if idiom.hasPrefix("global") {
                    threw = await withTaskExecutorPreference(globalConcurrentExecutor) { await Self.sleepUntilCancelled(idiom) }
                } else {
                    threw = await actor.sleepUntilCancelled(idiom)
                }
                return (threw, start.duration(to: .now()))
            }
            // nanoseconds: a delay the executor does not round (real time cannot change it).
            try? await Task.sleep(nanoseconds: racing ? 10_000_000_000 : 1_000_000)
            sleeper.cancel()
            let (threw, at) = await sleeper.value
            if racing {
                Simulation.check(at >= .seconds(10) && at < .seconds(11), "\(idiom): the sleep ended at \(at) (threw: \(threw))")
            } else {
                Simulation.check(threw, "\(idiom): the sleep ended without throwing")
                Simulation.check(at < .seconds(1), "\(idiom): the cancelled sleep ended at \(at) of virtual time, not at once")
            }
        }
    }

    /// Whether the sleep threw (it was cancelled).
    static func sleepUntilCancelled(_ idiom: String, isolation: isolated (any Actor)? = #isolation) async -> Bool {
        do {
            if idiom.hasSuffix("nanoseconds max") {
                try await Task.sleep(nanoseconds: .max)
            } else if idiom.hasSuffix("seconds Int64.max") {
                try await Task.sleep(for: .seconds(Int64.max))
            } else if idiom.hasSuffix("1000 years until") {
                try await Task.sleep(until: .now + .seconds(1_000 * 365 * 86_400), clock: .continuous)
            } else {
                try await Task.sleep(for: .seconds(10))
            }
            return false
        } catch {
            return true
        }
    }

    /// 100 years on a default actor in a `Task.detached`, awaited.
    static let centurySleep: @Sendable () async -> Void = {
        let start = MonotonicInstant.now()
        let century = Duration.seconds(100 * 365 * 86_400)
        await Task.detached { await DefaultExecutorSleepyActor().sleepFor(century) }.value
        let slept = start.duration(to: .now())
        // The executor rounds a delay up to three significant digits (documented): at most 1 % more.
        Simulation.check(slept >= century && slept <= century * 1.01, "a century's sleep took \(slept) of virtual time")
    }

    /// A task of the run under the global executor preference awaits a continuation resumed from
    /// a thread of its own after `wait` µs; `ranAfter` is set by the code after the resume.
    static func resumedFromOutsideUnderGlobalPreference(after wait: UInt32, ranAfter: OutsideFlag) -> @Sendable () async -> Void {
        {
            let resumed = OutsideFlag()
            Task.detached {
                await withTaskExecutorPreference(globalConcurrentExecutor) {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let box = DefaultExecutorResumer(continuation: continuation, wait: wait, resumed: resumed)
                        var thread = pthread_t()
                        let argument = Unmanaged.passRetained(box).toOpaque()
                        let rc = pthread_create(&thread, nil, { argument in
                            Unmanaged<DefaultExecutorResumer>.fromOpaque(argument!).takeRetainedValue().run()
                            return nil
                        }, argument)
                        precondition(rc == 0, "pthread_create failed: \(rc)")
                        pthread_detach(thread)
                    }
                    ranAfter.value.store(true, ordering: .releasing)
                }
            }
            var rounds = 0
            while !resumed.value.load(ordering: .acquiring) && rounds < 5_000 {
                try? await Task.sleep(for: .milliseconds(1))
                rounds += 1
            }
        }
    }

    /// Sleeps on each default-executor path, a few seconds of virtual time in all.
    static let referenceRun: @Sendable () async -> Void = {
        let actor = DefaultExecutorSleepyActor()
        async let a: Void = Task { await actor.sleepFor(.seconds(3)) }.value
        async let b: Void = Task.detached {
            await withTaskExecutorPreference(globalConcurrentExecutor) { try? await Task.sleep(for: .seconds(2)) }
        }.value
        async let c: Void = Task.detached { await DefaultExecutorSleepyActor().sleepFor(.seconds(1)) }.value
        _ = await (a, b, c)
    }

    /// Tasks asleep on the default-executor path (1 h), and the run fails: a check, an escaped
    /// job (a continuation resumed from a thread of its own), a deadlock (a continuation never
    /// resumed, with a sleeper of `.max` nanoseconds still pending).
    static func failingWhileSleeping(_ how: String) -> @Sendable () async -> Void {
        {
            let actor = DefaultExecutorSleepyActor()
            Task { await actor.sleepFor(.seconds(3_600)) }
            Task.detached { await withTaskExecutorPreference(globalConcurrentExecutor) { try? await Task.sleep(for: .seconds(3_600)) } }
            try? await Task.sleep(nanoseconds: 5_000_000)
            switch how {
            case "check":
                Simulation.check(false, "fails on purpose while tasks sleep")
            case "escaped":
                // A task of the run resumed from a thread of its own while the scenario polls.
                await Self.resumedFromOutsideUnderGlobalPreference(after: 1_000, ranAfter: OutsideFlag())()
            default:
                Task.detached { _ = await actor.sleepUntilCancelled("nanoseconds max") }
                await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            }
        }
    }

    /// A `ContinuousClock` deadline 200 ms ahead, 3 ms of real work, then a sleep until the deadline.
    static func deadlineAfterSlowWork(_ place: String) -> @Sendable () async -> Void {
        {
            let deadline = ContinuousClock.now + .milliseconds(200)
            for _ in 0..<20 { usleep(200) }  // 4 to 6 ms of real time, varying from run to run
            if place == "default actor" {
                await Task.detached { await DefaultExecutorSleepyActor().sleepUntil(deadline) }.value
            } else {
                try? await Task.sleep(until: deadline, clock: .continuous)
            }
        }
    }

    /// A deadline 100 ms ahead, a virtual sleep of 1 s, then a sleep until the deadline.
    static let deadlinePassedInVirtualTime: @Sendable () async -> Void = {
        let deadline = ContinuousClock.now + .milliseconds(100)
        let actor = DefaultExecutorSleepyActor()
        await Task.detached { await actor.sleepFor(.seconds(1)) }.value
        let start = MonotonicInstant.now()
        await Task.detached { await actor.sleepUntil(deadline) }.value
        let slept = start.duration(to: .now())
        Simulation.check(slept < .milliseconds(1), "a sleep until a deadline passed 900 ms ago (virtual) waited \(slept) of virtual time")
    }
}

actor DefaultExecutorSleepyActor {
    func sleep(_ kind: String, woke: DefaultExecutorCounter) async {
        await DefaultExecutorScenarios.sleep(kind)
        woke.value.add(1, ordering: .relaxed)
    }

    func sleepFor(_ duration: Duration) async {
        try? await Task.sleep(for: duration)
    }

    func sleepUntil(_ deadline: ContinuousClock.Instant) async {
        try? await Task.sleep(until: deadline, clock: .continuous)
    }

    func sleepUntilCancelled(_ idiom: String) async -> Bool {
        await DefaultExecutorScenarios.sleepUntilCancelled(idiom)
    }

    func touch() {}
}

final class DefaultExecutorCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// Resumes a continuation from a thread of its own after `wait` µs.
final class DefaultExecutorResumer: @unchecked Sendable {  // used by one thread
    let continuation: CheckedContinuation<Void, Never>
    let wait: UInt32
    let resumed: OutsideFlag

    init(continuation: CheckedContinuation<Void, Never>, wait: UInt32, resumed: OutsideFlag) {
        self.continuation = continuation
        self.wait = wait
        self.resumed = resumed
    }

    func run() {
        usleep(self.wait)
        self.continuation.resume()
        self.resumed.value.store(true, ordering: .releasing)
    }
}

/// Ordinary async code outside any run: tasks that sleep 3 ms of real time, 8 times each, in a
/// plain `Task {}`, on a default actor, under `globalConcurrentExecutor`, and with
/// `Task.sleep(nanoseconds:)`; each sleep is timed on the real clock.
final class DefaultExecutorOutsideWork: Sendable {
    let started = Atomic<Int>(0)
    let finished = Atomic<Int>(0)
    let tooShort = Atomic<Int>(0)
    let sleptDuringRuns = Atomic<Int>(0)
    let actor = DefaultExecutorSleepyActor()

    var allFinished: Bool { self.finished.load(ordering: .acquiring) == self.started.load(ordering: .acquiring) }

    /// Starts `count` tasks now (from the calling thread).
    func start(tasksBefore count: Int) {
        for number in 0..<count { self.startOne(number) }
    }

    func startOne(_ number: Int) {
        self.started.add(1, ordering: .relaxed)
        let kind = number % 4
        Task {
            for _ in 0..<8 {
                let start = ContinuousClock.now
                switch kind {
                case 0: try? await Task.sleep(for: .milliseconds(3))
                case 1: await self.actor.sleepFor(.milliseconds(3))
                case 2: await withTaskExecutorPreference(globalConcurrentExecutor) { try? await Task.sleep(for: .milliseconds(3)) }
                default: try? await Task.sleep(nanoseconds: 3_000_000)
                }
                if ContinuousClock.now - start < .milliseconds(3) { self.tooShort.add(1, ordering: .relaxed) }
                if SimulationTasks.active.withLock({ $0 != nil }) { self.sleptDuringRuns.add(1, ordering: .relaxed) }
            }
            self.finished.add(1, ordering: .releasing)
        }
    }
}

/// A thread of the test that starts outside tasks every 2 ms until told to stop.
final class DefaultExecutorFeeder: Sendable {
    let outside: DefaultExecutorOutsideWork
    let stop: OutsideFlag
    let done = OutsideFlag()

    init(outside: DefaultExecutorOutsideWork, stop: OutsideFlag) {
        self.outside = outside
        self.stop = stop
    }

    func run() {
        var number = 0
        while !self.stop.value.load(ordering: .acquiring) && number < 2_000 {
            self.outside.startOne(number)
            number += 1
            usleep(2_000)
        }
        self.done.value.store(true, ordering: .releasing)
    }
}
#endif
