#if SERIAL_SIMULATION
import Foundation
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// Attacks on the promises of the simulator's async support (ReplayableSchedules.md: "Async code",
/// "Sleeps are virtual", "Escapes", "When the run ends", "Liveness", "Determinism", and the
/// runtime-callback rule): each test states the promise it tries to break.
@Suite struct AsyncSimulationAttackTests {
    /// A stall of 3 s counts as `stuck` here (30 s by default), so that a broken rule costs seconds.
    static func limits(steps: Int = 100_000) -> SimulationLimits {
        var limits = SimulationLimits()
        limits.stallSeconds = 3
        limits.maximumSteps = steps
        return limits
    }

    static func sweep(
        _ seeds: Range<UInt64>, strategy: ScheduleStrategy = .random, taskThreads: Int = 2, steps: Int = 100_000,
        _ scenario: @escaping @Sendable () async -> Void
    ) -> [SimulationOutcome] {
        seeds.map { seed in
            SimulationRun.execute(
                SimulationScheduler(strategy: strategy, seed: seed), limits: Self.limits(steps: steps),
                taskThreads: taskThreads, scenario)
        }
    }

    static func replay(
        _ outcome: SimulationOutcome, taskThreads: Int = 2, _ scenario: @escaping @Sendable () async -> Void
    ) -> SimulationOutcome {
        SimulationRun.execute(SimulationScheduler(replaying: outcome.token), limits: Self.limits(), taskThreads: taskThreads, scenario)
    }

    static func failures(_ outcomes: [SimulationOutcome]) -> [String] {
        outcomes.compactMap { outcome in
            outcome.failure.map { "\($0.kind.rawValue) at step \($0.step): \($0.message.prefix(300)) replay: \(outcome.token)" }
        }
    }

    static func same(_ a: SimulationOutcome, _ b: SimulationOutcome) -> Bool {
        a.traceHash == b.traceHash && a.steps == b.steps && a.failure?.kind == b.failure?.kind
            && a.failure?.message == b.failure?.message && a.virtualNanoseconds == b.virtualNanoseconds
    }

    // MARK: Async code: every construct on the run's threads, replayed identically

    /// Promise ("Async code"): `Task {}`, `Task.detached`, a task group, `async let`, a default
    /// actor, an actor on a `SerialQueue` of the run, continuations resumed from a queue and an
    /// `AsyncStream` all run on the run's threads, and a run replays identically (trace hash,
    /// steps, report, virtual time).
    @Test(arguments: [ScheduleStrategy.random, .pct(depth: 3)])
    func everyConstructRunsAndReplaysIdentically(strategy: ScheduleStrategy) async {
        let (outcomes, replays) = await offThePool { () -> ([SimulationOutcome], [(SimulationOutcome, SimulationOutcome)]) in
            let outcomes = Self.sweep(0..<30, strategy: strategy, AttackScenarios.everyConstruct)
            let replays = outcomes.prefix(6).flatMap { first in
                (0..<3).map { _ in (first, Self.replay(first, AttackScenarios.everyConstruct)) }
            }
            return (outcomes, replays)
        }
        #expect(Self.failures(outcomes).isEmpty, "\(Self.failures(outcomes))")
        #expect(Set(outcomes.map(\.traceHash)).count >= 5, "\(Set(outcomes.map(\.traceHash)).count) paths in 30 runs")
        let diverged = replays.filter { !Self.same($0.0, $0.1) }
        #expect(diverged.isEmpty, "\(diverged.count) of \(replays.count) replays differ: \(diverged.map { ($0.0.token.description, $0.1.failure?.message ?? "passed") })")
    }

    // MARK: Sleeps are virtual

    /// Promise ("Sleeps are virtual"): `Task.sleep(for:)`, `Task.sleep(until:)` on
    /// `ContinuousClock` and `SuspendingClock`, `SuspendingClock().sleep`, `Task.sleep(nanoseconds:)`,
    /// a `WheelClock` sleep and `withWheelDeadline` all wait on virtual time: each waits at least
    /// what it asked (and not a second more), over an hour in all, in milliseconds of real time.
    @Test func sleepsOnEveryClockAreVirtualAndReplay() async {
        let realTime = RealTimeOfRuns()
        let (outcomes, replays) = await offThePool { () -> ([SimulationOutcome], [SimulationOutcome]) in
            let scenario = AttackScenarios.measuringRealTime(into: realTime, AttackScenarios.sleepsOnEveryClock)
            let outcomes = Self.sweep(0..<6, scenario)
            return (outcomes, outcomes.prefix(3).map { Self.replay($0, scenario) })
        }
        #expect(Self.failures(outcomes).isEmpty, "\(Self.failures(outcomes))")
        #expect(outcomes.allSatisfy { $0.virtualNanoseconds >= 3_600_000_000_000 },
            "virtual time: \(outcomes.map { Duration.nanoseconds($0.virtualNanoseconds) })")
        #expect(zip(outcomes, replays).allSatisfy { Self.same($0, $1) }, "a replay differed")
        // Each run holds the one-run-at-a-time lock while its scenario measures itself, so other
        // tests' runs do not count. 1 h 20 min of sleeps, done for real, would take that long:
        // the bound is 500 times what a run takes here (about 20 ms).
        let longest = Duration.nanoseconds(realTime.longestNanoseconds.load(ordering: .relaxed))
        #expect(longest < .seconds(10), "a run of 1 h 20 min of sleeps took \(longest) of real time")
        print("attack sleeps: longest run \(longest) of real time, steps \(outcomes.map(\.steps))")
    }

    // MARK: Cancellation in every position; the runtime-callback rule

    /// Promise (the runtime-callback rule, d77e9df): cancelling a task that sleeps, waits on an
    /// actor, waits in a group or waits on a stream never leaves a run `stuck`, deadlocked or at
    /// the step limit, with 1, 2 or 3 task threads; and the cancelled waits end as they should.
    @Test(arguments: [
        ("sleeping unstructured task", 1), ("sleeping unstructured task", 3),
        ("group of sleepers cancelled", 1), ("group of sleepers cancelled", 3),
        ("task waiting to enter a queue's actor", 2), ("cancel racing a resume", 2),
        ("cancel a parent of sleeping children", 2), ("stream consumer cancelled", 2),
    ])
    func cancellationNeverLeavesARunStuck(name: String, taskThreads: Int) async {
        let scenario = AttackScenarios.cancellations[name]!
        let outcomes = await offThePool { Self.sweep(0..<24, taskThreads: taskThreads, scenario) }
        #expect(Self.failures(outcomes).isEmpty, "\(name), \(taskThreads) threads: \(Self.failures(outcomes))")
    }

    /// Promise ("Sleeps are virtual": `WheelClock` sleeps of a service created in the run, and
    /// the runtime-callback rule): a task sleeping on a run's `WheelClock`, cancelled as its
    /// timer fires. `WheelClock.sleep`'s own `onCancel` (library code, not the user's) stops the
    /// timer and resumes the continuation under the runtime's status record lock, through seam
    /// operations that are scheduling points.
    /// (Reproduced 14 of 24 stuck before its `onCancel` ran inside `RuntimeCallback.run`.)
    @Test
    func cancellingAWheelClockSleepNeverLeavesARunStuck() async {
        let (outcomes, replayed) = await offThePool { () -> ([SimulationOutcome], SimulationOutcome?) in
            let outcomes = Self.sweep(0..<24, AttackScenarios.wheelSleepCancelledAsItFires)
            return (outcomes, outcomes.first { $0.failure != nil }.map { Self.replay($0, AttackScenarios.wheelSleepCancelledAsItFires) })
        }
        if let replayed { print("attack wheelSleepCancelledAsItFires: the first failure replayed as \(replayed.failure?.kind.rawValue ?? "passed")") }
        #expect(Self.failures(outcomes).isEmpty, "\(Self.failures(outcomes).count) of 24: \(Self.failures(outcomes))")
    }

    /// The same for `withWheelDeadline`, whose `onCancel` reads the clock (a scheduling point)
    /// and records the cancellation: callers cancelled as their operation's sleep ends.
    @Test func cancellingAWheelDeadlinesCallerNeverLeavesARunStuck() async {
        let outcomes = await offThePool { Self.sweep(0..<24, AttackScenarios.wheelDeadlineCancelledAsOperationEnds) }
        #expect(Self.failures(outcomes).isEmpty, "\(Self.failures(outcomes).count) of 24: \(Self.failures(outcomes))")
    }

    /// A sleep inside `withTaskExecutorPreference(globalConcurrentExecutor)`: its wake-up goes
    /// to the default executor, which in simulation builds routes the run's jobs to the run
    /// (`SimulationDefaultExecutor`): the sleep is virtual and the run passes.
    /// (Reproduced 4 of 4 as a deadlock at virtual +2 µs, the wake-up going to Dispatch, before.)
    @Test func aSleepPreferringTheGlobalExecutorIsVirtual() async {
        let outcomes = await offThePool { Self.sweep(0..<4, AttackScenarios.sleepPreferringGlobalExecutor) }
        #expect(Self.failures(outcomes).isEmpty, "\(Self.failures(outcomes))")
    }

    /// Promise ("Escapes": "the job never runs" unseen): the code after that sleep runs inside
    /// the run, never after it. (Before: it ran 100 ms of real time after the run ended, on a
    /// Dispatch thread, every time.)
    @Test func aSleepPreferringTheGlobalExecutorWakesInsideTheRun() async throws {
        let woke = OutsideFlag()
        let result = await offThePool { Simulation(strategy: .random).run(seed: 0, AttackScenarios.sleepPreferringGlobalExecutor(woke: woke)) }
        #expect(result.passed, "\(result.failure?.kind ?? ""): \(result.failure?.report.prefix(300) ?? "")")
        let woken = woke.value.load(ordering: .acquiring)
        #expect(woken, "the code after the sleep had not run when the run ended")
    }

    /// The article's old exception ("a sleep on a default actor, in a task with no executor
    /// preference"): a `Task {}` whose default actor method sleeps 100 ms now sleeps on virtual
    /// time, and the code after the sleep runs inside the run. (Before: a deadlock, 3 of 3
    /// seeds, and the wake-up ran the code after the run ended.)
    @Test func aSleepOnADefaultActorInAnUnstructuredTaskIsVirtual() async throws {
        let woke = OutsideFlag()
        let results = await offThePool {
            (0..<UInt64(3)).map { Simulation(strategy: .random).run(seed: $0, AttackScenarios.sleepOnDefaultActor(woke: woke)) }
        }
        let kinds = results.map { $0.failure?.kind ?? "passed" }
        #expect(kinds.allSatisfy { $0 == "passed" }, "\(kinds): \(results.first { !$0.passed }?.failure?.description.prefix(400) ?? "")")
        let woken = woke.value.load(ordering: .acquiring)
        #expect(woken, "the code after the sleep had not run when the runs ended")
    }

    /// The runtime-callback rule and `RequestQueue.response` ("Cancelling the calling task
    /// cancels the request"): its `onCancel` (library code) cancels the request's handle, taking
    /// the request queue's locks under the runtime's status record lock. Callers cancelled while
    /// their answers come back.
    /// (Reproduced 4 of 24 stuck before its `onCancel` ran inside `RuntimeCallback.run`.)
    @Test
    func cancellingAnAsyncRequestNeverLeavesARunStuck() async {
        let (outcomes, replayed) = await offThePool { () -> ([SimulationOutcome], SimulationOutcome?) in
            let outcomes = Self.sweep(0..<24, AttackScenarios.asyncRequestsCancelled)
            return (outcomes, outcomes.first { $0.failure != nil }.map { Self.replay($0, AttackScenarios.asyncRequestsCancelled) })
        }
        if let replayed { print("attack asyncRequestsCancelled: the first failure replayed as \(replayed.failure?.kind.rawValue ?? "passed")") }
        #expect(Self.failures(outcomes).isEmpty, "\(Self.failures(outcomes).count) of 24: \(Self.failures(outcomes))")
    }

    /// Promise ("When the run ends", and "Determinism": a run keeps no state of an earlier one): a
    /// run whose default-actor sleep escaped to Dispatch, followed at once by a run of another
    /// scenario that lasts longer than the sleep in real time: the second run's trace must be
    /// the one it has alone.
    @Test func anEarlierRunsLateWakeUpDoesNotTouchTheNextRun() async {
        let (alone, after) = await offThePool { () -> (SimulationOutcome, [SimulationOutcome]) in
            let alone = Self.sweep(1..<2, AttackScenarios.busyForRealTime)[0]
            let after = (0..<3).map { _ -> SimulationOutcome in
                _ = Self.sweep(0..<1, AttackScenarios.sleepOnDefaultActor(woke: OutsideFlag(), for: .milliseconds(20)))
                return Self.sweep(1..<2, AttackScenarios.busyForRealTime)[0]
            }
            return (alone, after)
        }
        #expect(alone.failure == nil, "\(Self.failures([alone]))")
        #expect(after.allSatisfy { Self.same($0, alone) }, "after an escaped sleep: \(Self.failures(after)), hashes \(after.map(\.traceHash)) vs \(alone.traceHash)")
    }

    /// The article: "a task that prefers an executor of its own (a `SerialQueue`, a `WorkerPool`
    /// of the run) runs there and is explored". A sleep in such a task is virtual too (its
    /// wake-up goes to the default executor: neither schedules), and the code after it runs
    /// inside the run. (Before: a deadlock at virtual +25 µs, 2 of 2 seeds each.)
    @Test(arguments: ["queue", "pool"])
    func aSleepPreferringAnExecutorOfTheRunIsVirtual(executor: String) async throws {
        let woke = OutsideFlag()
        let results = await offThePool {
            (0..<UInt64(2)).map { Simulation(strategy: .random).run(seed: $0, AttackScenarios.sleepPreferring(executor, woke: woke)) }
        }
        let kinds = results.map { $0.failure?.kind ?? "passed" }
        #expect(kinds.allSatisfy { $0 == "passed" }, "\(kinds): \(results.first { !$0.passed }?.failure?.report.prefix(300) ?? "")")
        let woken = woke.value.load(ordering: .acquiring)
        #expect(woken, "the code after the sleep had not run when the runs ended")
    }

    /// An actor on a `SerialQueue` of the run whose method sleeps, called from the scenario's
    /// structured child (a task that prefers the run's executor): the article says every sleep of
    /// a task on the run's threads is virtual; only a default actor's sleep in a task with no
    /// preference is listed as escaping.
    @Test func aSleepInsideAQueuesActorIsVirtual() async {
        let outcomes = await offThePool { Self.sweep(0..<8, AttackScenarios.sleepInsideQueueActor) }
        #expect(Self.failures(outcomes).isEmpty, "\(Self.failures(outcomes))")
    }

    /// "Sleep until cancelled" idioms (`Task.sleep(nanoseconds: .max)`, a sleep of 1,000 years)
    /// are legal Swift: under the simulator each must wait on virtual time until its task is
    /// cancelled, and the run pass, not trap on arithmetic or hang.
    /// (Each idiom trapped the process, an overflow in the executor's rounding, before it
    /// saturated.)
    @Test(arguments: ["nanoseconds max", "1000 years for", "1000 years until"])
    func aSleepUntilCancelledEndsByCancellation(idiom: String) async {
        let outcomes = await offThePool { Self.sweep(0..<4, AttackScenarios.sleepUntilCancelled(idiom)) }
        #expect(Self.failures(outcomes).isEmpty, "\(idiom): \(Self.failures(outcomes))")
    }

    // MARK: Escapes

    /// Promise ("Escapes"): a continuation resumed from a queue created outside the run (its
    /// worker is not a thread of the run) ends the run as `escaped job`, and the job never runs,
    /// not even after the run.
    @Test func aResumeFromAQueueOutsideTheRunEndsItAsEscapedAndNeverRuns() async throws {
        let outside = SerialQueue(label: "attack-outside")
        outside.sync {}
        var kinds: [String] = []
        for wait: UInt32 in [20_000, 200_000] {
            let ranAfter = OutsideFlag()
            let result = await offThePool {
                Simulation(strategy: .random).run(seed: 0, AttackScenarios.resumedFrom(outside, after: wait, ranAfter: ranAfter))
            }
            guard let failure = result.failure else {
                kinds.append("passed")
                continue
            }
            #expect(failure.kind == "escaped job", "\(failure.kind): \(failure.report)")
            try await Task.sleep(for: .milliseconds(300))  // real time: a job that ran unseen would have run by now
            let ran = ranAfter.value.load(ordering: .acquiring)
            #expect(!ran, "the escaped job ran after all")
            return
        }
        Issue.record("never suspended before the outside resume: \(kinds)")
    }

    /// Promise ("Escapes": "A job of one of the run's tasks enqueued from a thread outside the
    /// run (a continuation resumed from a thread of your own ...): the run ends as `escaped job`,
    /// and the job never runs"): here the task waits inside an actor on a `SerialQueue` of the
    /// run, so the resume enqueues its job on that queue (not on the run's task pool).
    @Test func aResumeFromOutsideIntoAQueuesActorEndsTheRunAsEscaped() async throws {
        var kinds: [String] = []
        for wait: UInt32 in [20_000, 200_000] {
            let ranAfter = OutsideFlag()
            let result = await offThePool {
                Simulation(strategy: .random).run(seed: 0, AttackScenarios.resumedFromOutsideOnAQueuesActor(after: wait, ranAfter: ranAfter))
            }
            try await Task.sleep(for: .milliseconds(300))  // real time: a job that ran unseen would have run by now
            let ran = ranAfter.value.load(ordering: .acquiring)
            kinds.append("\(result.failure?.kind ?? "passed") (ran: \(ran)) \(result.failure?.replayLine ?? "")")
            if result.failure?.kind == "escaped job" && !ran { return }
        }
        print("attack outside resume into a queue's actor: \(kinds)")
        Issue.record("not escaped, or the job ran: \(kinds)")
    }

    // MARK: Failures that speak

    /// Promise ("Failures that speak"): a continuation awaited in an actor and a stream nobody
    /// finishes: a deadlock whose report names the scenario's task and the tasks it started.
    @Test func aDeadlockOnAnActorAndAStreamNamesTheSuspendedTasks() async throws {
        let outcomes = await offThePool { Self.sweep(0..<5, AttackScenarios.strandedOnActorAndStream) }
        for outcome in outcomes {
            let failure = try #require(outcome.failure, "the run passed")
            #expect(failure.kind == .deadlock, "\(failure.kind): \(failure.message)")
            #expect(failure.message.contains("task 1 (the scenario's): not seen to finish"), "\(failure.message)")
            #expect(failure.message.contains("task 2: ") && failure.message.contains("task 3: "), "\(failure.message)")
        }
    }

    /// Promise: a failed `Simulation.check` in async code fails the run, wherever it runs: a group
    /// child, an `async let`, a detached task, a default actor, a queue's actor, a stream's consumer.
    @Test(arguments: ["group child", "async let", "detached", "default actor", "queue actor", "stream consumer"])
    func aFailedCheckAnywhereFailsTheRun(place: String) async {
        let outcomes = await offThePool { Self.sweep(0..<3, AttackScenarios.failedCheck(in: place)) }
        for outcome in outcomes {
            #expect(outcome.failure?.kind == .check, "\(place): \(outcome.failure.map { "\($0.kind): \($0.message)" } ?? "passed")")
            #expect(outcome.failure?.message.contains("wrong in \(place)") == true, "\(outcome.failure?.message ?? "")")
        }
    }

    // MARK: Liveness

    /// Promise ("Liveness"): a run that stays hot fails as `liveness`: one whose tasks sleep an
    /// hour and end with the property still false (hot at the end), and one whose task spins on
    /// `Task.yield()` forever (hot past the bound, before the step limit).
    @Test func aRunThatStaysHotFailsAsLiveness() async {
        let (ended, spinning, later) = await offThePool { () -> ([SimulationOutcome], [SimulationOutcome], [SimulationOutcome]) in
            (Self.sweep(0..<3, AttackScenarios.hotAtTheEnd),
             Self.sweep(0..<3, steps: 50_000, AttackScenarios.hotWhileYielding),
             Self.sweep(0..<3, AttackScenarios.coolAfterAnHour))
        }
        #expect(ended.allSatisfy { $0.failure?.kind == .liveness }, "\(ended.map { $0.failure?.kind.rawValue ?? "passed" })")
        #expect(spinning.allSatisfy { $0.failure?.kind == .liveness }, "\(spinning.map { "\($0.failure?.kind.rawValue ?? "passed") \($0.failure?.message.prefix(200) ?? "")" })")
        #expect(Self.failures(later).isEmpty, "hot for an hour of virtual time but few steps: \(Self.failures(later))")
    }

    // MARK: Determinism

    /// Promise ("Determinism, checked"): a failing async scenario that branches on
    /// `ContinuousClock.now` (real time) is reported `nondeterministic`, not given a token that
    /// would not replay. The branch starts 0 to 6 extra tasks: two runs agree 1 time in 7.
    @Test func aScenarioReadingRealTimeIsFoundNondeterministic() async {
        let report = await offThePool {
            Simulation(strategy: .random, checksDeterminism: true).explore(seeds: 0..<8, AttackScenarios.readsRealTime)
        }
        let kinds = report.results.map { $0.failure?.kind ?? "passed" }
        print("attack real time: \(kinds)")
        #expect(kinds.filter { $0 == "nondeterministic" }.count >= 4, "\(kinds)")
    }

    // MARK: Runs back to back

    /// Promise ("When the run ends", the hooks "restored when it ends"): after async runs that
    /// passed, escaped, deadlocked or failed a check, the global-executor hook is unset again, an
    /// ordinary `Task {}` runs off the run's threads, `Task.sleep` outside a run takes real time,
    /// and a plain scenario's `Task {}` runs on the cooperative pool.
    @Test func stateDoesNotLeakFromOneRunToTheNext() async throws {
        // Read inside a plain run: it holds the one-run-at-a-time lock (other tests' async runs
        // set the hook while they last) and sets no hook itself.
        let hookInAPlainRun = { @Sendable () -> UInt? in
            let seen = Atomic<UInt>(0)
            _ = Simulation(strategy: .random).run(seed: 0) {
                let hook = dlsym(dlopen(nil, RTLD_LAZY), "swift_task_enqueueGlobal_hook")!
                    .assumingMemoryBound(to: UnsafeRawPointer?.self)
                seen.store(UInt(bitPattern: hook.pointee), ordering: .relaxed)
            }
            return seen.load(ordering: .relaxed)
        }
        let (before, kinds, after) = await offThePool { () -> (UInt?, [String], UInt?) in
            let before = hookInAPlainRun()
            let kinds = [Simulation(strategy: .random).run(seed: 1, AttackScenarios.everyConstruct),
             Simulation(strategy: .random).run(seed: 1, AttackScenarios.failedCheck(in: "detached")),
             Simulation(strategy: .random).run(seed: 1, AttackScenarios.strandedOnActorAndStream)]
                .map { $0.failure?.kind ?? "passed" }
            return (before, kinds, hookInAPlainRun())
        }
        #expect(kinds == ["passed", "failed check", "deadlock"], "\(kinds)")
        #expect(before == 0 && after == 0, "the global enqueue hook: \(String(describing: before)) before, \(String(describing: after)) after the runs")
        let simulated = await Task { SimulationRun.isSimulatedThread }.value
        #expect(!simulated, "an ordinary Task after the runs ran on a simulated thread")
        let detached = await Task.detached { SimulationRun.isSimulatedThread }.value
        #expect(!detached)
        let sleepStarted = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(50))
        #expect(ContinuousClock.now - sleepStarted >= .milliseconds(50), "Task.sleep outside a run did not take real time")
        let plain = await offThePool {
            Simulation(strategy: .random).run(seed: 0) {
                let seen = Mailbox()
                let onRunThread = OutsideFlag()
                Task {
                    onRunThread.value.store(SimulationRun.isSimulatedThread, ordering: .releasing)
                    seen.post()
                }
                seen.take()
                Simulation.check(!onRunThread.value.load(ordering: .acquiring), "a plain scenario's Task ran on a run's thread")
            }
        }
        // A plain scenario waiting for a cooperative-pool task with a seam mailbox is outside the
        // promise (threads outside the run): only what the task saw is asserted, if it posted.
        if plain.failure?.kind == "failed check" { Issue.record("\(plain.failure!.report)") }
    }
}

/// The scenarios of the attacks.
enum AttackScenarios {
    /// Every construct of "Async code" in one run.
    static let everyConstruct: @Sendable () async -> Void = {
        let counter = CountingActor()
        let queue = SerialQueue(label: "attack-actor-queue")
        let onQueue = AttackQueueActor(queue: queue)
        let onRunThreads = Atomic<Int>(0)
        let note: @Sendable () -> Void = {
            if SimulationRun.isSimulatedThread { onRunThreads.add(1, ordering: .relaxed) }
        }
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        let producer = Task {
            note()
            for value in 1...3 {
                input.yield(value)
                await Task.yield()
            }
            input.finish()
        }
        let consumer = Task.detached {
            note()
            var sum = 0
            for await value in stream { sum += value }
            return sum
        }
        async let first = counter.add()
        async let second = onQueue.add()
        let grouped = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<3 { group.addTask { note(); return await counter.add() } }
            return await group.reduce(0) { max($0, $1) }
        }
        let answer: Int = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: 7) }
        }
        let thrown: Int? = try? await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
            queue.async { continuation.resume(throwing: CancellationError()) }
        }
        let (a, b) = await (first, second)
        await producer.value
        let sum = await consumer.value
        let total = await counter.add()
        Simulation.check(sum == 6, "the stream carried \(sum)")
        Simulation.check(total == 5 && grouped >= 3 && a >= 1 && b == 1, "counts \(total) \(grouped) \(a) \(b)")
        Simulation.check(answer == 7 && thrown == nil, "continuations gave \(answer), \(String(describing: thrown))")
        Simulation.check(onRunThreads.load(ordering: .relaxed) == 5, "\(5 - onRunThreads.load(ordering: .relaxed)) of 5 jobs off the run's threads")
    }

    /// `scenario`, recording the real time it took (read, never branched on: the run stays deterministic).
    static func measuringRealTime(into record: RealTimeOfRuns, _ scenario: @escaping @Sendable () async -> Void) -> @Sendable () async -> Void {
        {
            let started = ContinuousClock.now
            await scenario()
            let (seconds, attoseconds) = (ContinuousClock.now - started).components
            record.longestNanoseconds.max(UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000), ordering: .relaxed)
        }
    }

    /// Sleeps on every clock, each measured on virtual time.
    static let sleepsOnEveryClock: @Sendable () async -> Void = {
        let queue = SerialQueue(label: "attack-wheel")
        let clock = WheelClock(timers: TimerService(scheduler: queue, tick: .milliseconds(1)))
        func measured(_ name: String, _ asked: Duration, _ sleep: () async throws -> Void) async {
            let start = MonotonicInstant.now()
            do { try await sleep() } catch { Simulation.check(false, "\(name) threw \(error)") }
            let slept = start.duration(to: .now())
            Simulation.check(slept >= asked && slept < asked + .seconds(1), "\(name): asked \(asked), slept \(slept) of virtual time")
        }
        await measured("Task.sleep(for:)", .seconds(600)) { try await Task.sleep(for: .seconds(600)) }
        await measured("Task.sleep(until:) continuous", .seconds(600)) {
            try await Task.sleep(until: .now + .seconds(600), clock: .continuous)
        }
        await measured("Task.sleep(until:) suspending", .seconds(600)) {
            try await Task.sleep(until: SuspendingClock.now + .seconds(600), clock: .suspending)
        }
        await measured("SuspendingClock.sleep(for:)", .seconds(600)) { try await SuspendingClock().sleep(for: .seconds(600)) }
        await measured("Task.sleep(nanoseconds:)", .seconds(600)) { try await Task.sleep(nanoseconds: 600_000_000_000) }
        await measured("WheelClock.sleep(for:)", .seconds(600)) { try await clock.sleep(for: .seconds(600)) }
        // A structured child sleeping while its parent sleeps too: both virtual.
        await measured("two children", .seconds(600)) {
            async let a: Void = Task.sleep(for: .seconds(600))
            async let b: Void = clock.sleep(for: .seconds(300))
            _ = try await (a, b)
        }
        let outcome: String
        do {
            outcome = try await withWheelDeadline(at: clock.now.advanced(by: .seconds(60)), tolerance: .zero, clock: clock) {
                try await Task.sleep(for: .seconds(120))
                return "ran"
            }
        } catch is WheelDeadlineExceeded {
            outcome = "exceeded"
        } catch {
            outcome = "\(error)"
        }
        Simulation.check(outcome == "exceeded", "withWheelDeadline of 60 s over a 120 s sleep: \(outcome)")
        queue.sync {}
    }

    /// Cancellation in every position.
    static let cancellations: [String: @Sendable () async -> Void] = [
        "sleeping unstructured task": {
            let sleeper = Task { try await Task.sleep(for: .seconds(60)) }
            try? await Task.sleep(for: .milliseconds(1))
            sleeper.cancel()
            let result = await sleeper.result
            Simulation.check((try? result.get()) == nil, "a sleep cancelled after 1 ms of 60 s did not throw")
        },
        "group of sleepers cancelled": {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<6 { group.addTask { try? await Task.sleep(for: .seconds(index == 0 ? 1 : 60)) } }
                await group.next()
                group.cancelAll()
            }
        },
        "task waiting to enter a queue's actor": {
            let queue = SerialQueue(label: "attack-busy")
            let actor = AttackQueueActor(queue: queue)
            let gate = Mailbox()
            queue.async { gate.take() }  // the actor's queue is busy until the gate opens
            let waiter = Task.detached { await actor.add() }
            await withTaskGroup(of: Int.self) { group in
                group.addTask { await actor.add() }
                group.addTask { await actor.add() }
                group.cancelAll()
                waiter.cancel()
                gate.post()
                var values: [Int] = [await waiter.value]
                for await value in group { values.append(value) }
                Simulation.check(values.sorted() == [1, 2, 3], "the actor counted \(values)")
            }
        },
        "cancel racing a resume": {
            let queue = SerialQueue(label: "attack-answer")
            let waiter = Task {
                let value: Int = await withCheckedContinuation { continuation in
                    queue.async { continuation.resume(returning: 1) }
                }
                return (value, Task.isCancelled)
            }
            let canceller = Task.detached { waiter.cancel() }
            await canceller.value
            let (value, cancelled) = await waiter.value
            Simulation.check(value == 1 && cancelled, "got \(value), cancelled \(cancelled)")
        },
        "cancel a parent of sleeping children": {
            let parent = Task {
                await withTaskGroup(of: Bool.self) { group in
                    for _ in 0..<3 { group.addTask { (try? await Task.sleep(for: .seconds(60))) != nil } }
                    return await group.reduce(false) { $0 || $1 }
                }
            }
            async let cancel: Void = { try? await Task.sleep(for: .milliseconds(2)); parent.cancel() }()
            await cancel
            let anyFinished = await parent.value
            Simulation.check(!anyFinished, "a child slept 60 s though its parent was cancelled at 2 ms")
        },
        "stream consumer cancelled": {
            let (stream, input) = AsyncStream.makeStream(of: Int.self)
            let consumer = Task {
                var count = 0
                for await _ in stream { count += 1 }
                return count
            }
            input.yield(1)
            try? await Task.sleep(for: .milliseconds(1))
            consumer.cancel()
            input.yield(2)
            let count = await consumer.value
            Simulation.check(count <= 2, "counted \(count)")
            input.finish()
        },
    ]

    /// A task sleeping 10 ms on a run's `WheelClock`, cancelled at 10 ms by another task.
    static let wheelSleepCancelledAsItFires: @Sendable () async -> Void = {
        let queue = SerialQueue(label: "attack-wheel-cancel")
        let clock = WheelClock(timers: TimerService(scheduler: queue, tick: .milliseconds(1)))
        let sleepers = (0..<2).map { _ in Task { try await clock.sleep(for: .milliseconds(10)) } }
        try? await clock.sleep(for: .milliseconds(10))
        for sleeper in sleepers { sleeper.cancel() }
        for sleeper in sleepers { _ = await sleeper.result }
        queue.sync {}
    }

    /// A task sleeping "forever" in `idiom`, cancelled after 1 ms.
    static func sleepUntilCancelled(_ idiom: String) -> @Sendable () async -> Void {
        {
            let sleeper = Task {
                switch idiom {
                case "nanoseconds max": try await Task.sleep(nanoseconds: .max)
                case "1000 years for": try await Task.sleep(for: .seconds(1_000 * 365 * 86_400))
                default: try await Task.sleep(until: .now + .seconds(1_000 * 365 * 86_400), clock: .continuous)
                }
            }
            try? await Task.sleep(for: .milliseconds(1))
            sleeper.cancel()
            let result = await sleeper.result
            Simulation.check((try? result.get()) == nil, "\(idiom): the sleep ended without throwing")
        }
    }

    /// Two callers of a 50 ms deadline whose operations sleep 10 ms, cancelled at 10 ms.
    static let wheelDeadlineCancelledAsOperationEnds: @Sendable () async -> Void = {
        let queue = SerialQueue(label: "attack-deadline-cancel")
        let clock = WheelClock(timers: TimerService(scheduler: queue, tick: .milliseconds(1)))
        let callers = (0..<2).map { _ in
            Task {
                try await withWheelDeadline(after: .milliseconds(50), tolerance: .zero, clock: clock) {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
        }
        try? await Task.sleep(for: .milliseconds(10))
        for caller in callers { caller.cancel() }
        for caller in callers { _ = await caller.result }
        queue.sync {}
    }

    /// A sleep in a scope that prefers the global concurrent executor.
    static let sleepPreferringGlobalExecutor: @Sendable () async -> Void = {
        let start = MonotonicInstant.now()
        await withTaskExecutorPreference(globalConcurrentExecutor) {
            try? await Task.sleep(for: .seconds(60))
        }
        let slept = start.duration(to: .now())
        Simulation.check(slept >= .seconds(60), "slept \(slept) of virtual time")
    }

    /// The same, 100 ms; `woke` is set by the code after the sleep (it must never run unseen).
    static func sleepPreferringGlobalExecutor(woke: OutsideFlag) -> @Sendable () async -> Void {
        {
            let start = MonotonicInstant.now()
            await withTaskExecutorPreference(globalConcurrentExecutor) {
                try? await Task.sleep(for: .milliseconds(100))
                woke.value.store(true, ordering: .releasing)
            }
            let slept = start.duration(to: .now())
            Simulation.check(slept >= .milliseconds(100), "slept \(slept) of virtual time")
        }
    }

    /// A task that prefers a queue or a pool of the run, sleeping 100 ms.
    static func sleepPreferring(_ executor: String, woke: OutsideFlag) -> @Sendable () async -> Void {
        {
            let preferred: any TaskExecutor = executor == "queue" ? SerialQueue(label: "attack-preferred") : WorkerPool(threads: 1)
            let start = MonotonicInstant.now()
            await Task(executorPreference: preferred) {
                try? await Task.sleep(for: .milliseconds(100))
                woke.value.store(true, ordering: .releasing)
            }.value
            let slept = start.duration(to: .now())
            Simulation.check(slept >= .milliseconds(100), "slept \(slept) of virtual time")
        }
    }

    /// A `Task {}` (no executor preference) whose default actor method sleeps 100 ms.
    static func sleepOnDefaultActor(woke: OutsideFlag, for duration: Duration = .milliseconds(100)) -> @Sendable () async -> Void {
        {
            let actor = AttackSleepyActor()
            let start = MonotonicInstant.now()
            await Task { await actor.sleep(woke: woke, for: duration) }.value
            let slept = start.duration(to: .now())
            Simulation.check(slept >= duration, "slept \(slept) of virtual time")
        }
    }

    /// `everyConstruct`, then 60 ms of real time in which each millisecond is a clock read.
    static let busyForRealTime: @Sendable () async -> Void = {
        await everyConstruct()
        for _ in 0..<60 {
            _ = MonotonicInstant.now()
            usleep(1_000)
        }
        await everyConstruct()
    }

    /// Three callers of `RequestQueue.response`, each cancelled as its answer comes back.
    static let asyncRequestsCancelled: @Sendable () async -> Void = {
        let queue = SerialQueue(label: "attack-req")
        let server = SerialQueue(label: "attack-req-server")
        let policy = RequestQueue<PromiseScenarios.DelayedTransport>.Policy(
            classify: { _, _ in .success }, refresh: { credential, done in done(.success(credential + 1)) })
        let requests = RequestQueue(
            transport: PromiseScenarios.DelayedTransport(server: server, followUp: ScenarioBox(nil)), credential: 0,
            policy: policy, scheduler: queue)
        let callers = (0..<3).map { number in Task { await requests.response(for: number) } }
        for caller in callers {
            await Task.yield()
            caller.cancel()
        }
        for caller in callers { _ = await caller.value }
        _ = requests.shutdown()
        server.sync {}
        queue.sync {}
    }

    /// A sleep inside an actor on a queue of the run, from a structured child.
    static let sleepInsideQueueActor: @Sendable () async -> Void = {
        let actor = AttackQueueActor(queue: SerialQueue(label: "attack-sleepy"))
        let start = MonotonicInstant.now()
        async let a = actor.sleepThenAdd(.seconds(10))
        async let b = actor.sleepThenAdd(.seconds(10))
        let values = await [a, b]
        let slept = start.duration(to: .now())
        Simulation.check(values.sorted() == [1, 2], "the actor counted \(values)")
        Simulation.check(slept >= .seconds(10) && slept < .seconds(30), "slept \(slept) of virtual time")
    }

    /// Awaits a continuation resumed from `outside` (a queue whose worker is not in the run).
    static func resumedFrom(_ outside: SerialQueue, after wait: UInt32, ranAfter: OutsideFlag) -> @Sendable () async -> Void {
        {
            let resumed = OutsideFlag()
            Task {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    outside.async {
                        usleep(wait)
                        continuation.resume()
                        resumed.value.store(true, ordering: .releasing)
                    }
                }
                ranAfter.value.store(true, ordering: .releasing)
            }
            var rounds = 0
            while !resumed.value.load(ordering: .acquiring) && rounds < 5_000 {
                _ = MonotonicInstant.now()
                usleep(1_000)
                rounds += 1
            }
        }
    }

    /// A task in an actor on a queue of the run awaits a continuation resumed by a `Thread`.
    static func resumedFromOutsideOnAQueuesActor(after wait: UInt32, ranAfter: OutsideFlag) -> @Sendable () async -> Void {
        {
            let resumed = OutsideFlag()
            let actor = AttackQueueActor(queue: SerialQueue(label: "attack-outside-actor"))
            Task { await actor.awaitOutside(after: wait, resumed: resumed, ranAfter: ranAfter) }
            var rounds = 0
            while !resumed.value.load(ordering: .acquiring) && rounds < 5_000 {
                _ = MonotonicInstant.now()
                usleep(1_000)
                rounds += 1
            }
            for _ in 0..<50 {  // time for the resumed job to show up
                _ = MonotonicInstant.now()
                usleep(1_000)
            }
        }
    }

    /// A task stranded in a default actor on a continuation nobody resumes, one on a stream nobody finishes.
    static let strandedOnActorAndStream: @Sendable () async -> Void = {
        let actor = AttackStrandingActor()
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        let onActor = Task { await actor.strand() }
        let onStream = Task {
            for await _ in stream {}
        }
        input.yield(1)
        await onActor.value
        await onStream.value
    }

    /// A scenario whose only failure is a `Simulation.check` in `place`.
    static func failedCheck(in place: String) -> @Sendable () async -> Void {
        let fail: @Sendable () -> Void = { Simulation.check(false, "wrong in \(place)") }
        switch place {
        case "group child":
            return { await withTaskGroup(of: Void.self) { group in group.addTask { fail() } } }
        case "async let":
            return {
                async let done: Void = fail()
                await done
            }
        case "detached":
            return { await Task.detached { fail() }.value }
        case "default actor":
            return { await AttackCheckingActor().run(fail) }
        case "queue actor":
            return {
                let queue = SerialQueue(label: "attack-check")
                await AttackQueueActor(queue: queue).run(fail)
            }
        default:
            return {
                let (stream, input) = AsyncStream.makeStream(of: Int.self)
                let consumer = Task { for await _ in stream { fail() } }
                input.yield(1)
                input.finish()
                await consumer.value
            }
        }
    }

    /// Never cools: the flag is never set, while tasks sleep an hour and end.
    static let hotAtTheEnd: @Sendable () async -> Void = {
        let flag = OutsideFlag()
        Simulation.eventually("the flag is set", withinSteps: 100_000) { flag.value.load(ordering: .relaxed) }
        async let a: Void? = try? Task.sleep(for: .seconds(1_800))
        async let b: Void? = try? Task.sleep(for: .seconds(3_600))
        _ = await (a, b)
    }

    /// Hot while a task yields forever.
    static let hotWhileYielding: @Sendable () async -> Void = {
        let flag = OutsideFlag()
        Simulation.eventually("the flag is set", withinSteps: 2_000) { flag.value.load(ordering: .relaxed) }
        let spinner = Task {
            while !flag.value.load(ordering: .relaxed) { await Task.yield() }
        }
        await spinner.value
    }

    /// Hot through an hour of sleep, then cool: few scheduling points, so no liveness failure.
    static let coolAfterAnHour: @Sendable () async -> Void = {
        let flag = OutsideFlag()
        Simulation.eventually("the flag is set", withinSteps: 5_000) { flag.value.load(ordering: .relaxed) }
        try? await Task.sleep(for: .seconds(3_600))
        flag.value.store(true, ordering: .relaxed)
    }

    static let base = ContinuousClock.now

    /// Starts 0 to 6 tasks depending on the real clock's microseconds, then fails a check.
    static let readsRealTime: @Sendable () async -> Void = {
        let elapsed = ContinuousClock.now - Self.base
        let extra = Int(abs(elapsed.components.attoseconds / 1_000_000_000_000) % 7)  // microseconds of real time
        let counter = CountingActor()
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<extra { group.addTask { await counter.add() } }
        }
        Simulation.check(false, "always fails (after \(extra) extra tasks)")
    }
}

final class RealTimeOfRuns: Sendable {
    let longestNanoseconds = Atomic<UInt64>(0)
}

actor AttackQueueActor {
    let queue: SerialQueue
    private var value = 0
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }

    init(queue: SerialQueue) { self.queue = queue }

    func add() -> Int {
        self.value += 1
        return self.value
    }

    func sleepThenAdd(_ duration: Duration) async -> Int {
        try? await Task.sleep(for: duration)
        return self.add()
    }

    func run(_ body: @Sendable () -> Void) { body() }

    func awaitOutside(after wait: UInt32, resumed: OutsideFlag, ranAfter: OutsideFlag) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                usleep(wait)
                continuation.resume()
                resumed.value.store(true, ordering: .releasing)
            }
        }
        ranAfter.value.store(true, ordering: .releasing)
    }
}

actor AttackCheckingActor {
    func run(_ body: @Sendable () -> Void) { body() }
}

actor AttackSleepyActor {
    func sleep(woke: OutsideFlag, for duration: Duration) async {
        try? await Task.sleep(for: duration)
        woke.value.store(true, ordering: .releasing)
    }
}

actor AttackStrandingActor {
    func strand() async {
        await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
    }
}
#endif
