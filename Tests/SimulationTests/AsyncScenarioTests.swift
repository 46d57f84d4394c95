#if SERIAL_SIMULATION
import Foundation
import Glibc
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// Async scenarios: every task, actor, continuation and sleep of a run on its simulated threads
/// and virtual time, explored and replayed (`Simulation.explore` with an `async` closure).
@Suite struct AsyncScenarioTests {
    /// `Task {}`, `Task.detached`, a default actor, a continuation resumed from a queue's worker
    /// and an hour of `Task.sleep`: every job on a simulated thread, the hour virtual.
    @Test(arguments: [Simulation.Strategy.random, .pct(depth: 3)])
    func tasksActorsContinuationsAndSleepsRunOnTheRunsThreadsAndVirtualTime(strategy: Simulation.Strategy) async {
        let started = ContinuousClock.now
        let report = await offThePool { Simulation(strategy: strategy).explore(seeds: 0..<20, AsyncScenarios.everyKindOfJob) }
        let elapsed = ContinuousClock.now - started
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
        #expect(report.results.allSatisfy { $0.virtualTime >= .seconds(3_600) }, "\(report.results.map(\.virtualTime))")
        #expect(Set(report.results.map(\.traceHash)).count >= 5, "\(Set(report.results.map(\.traceHash)).count) paths")
        // Real time is not asserted: other tests' runs hold the one-run-at-a-time lock meanwhile.
        print("async every kind of job (\(strategy)): 20 runs in \(elapsed), steps \(report.results.map(\.steps))")
    }

    @Test func anAsyncRunReplaysIdentically() async {
        let (first, replays) = await offThePool { () -> (SimulationResult, [SimulationResult]) in
            let first = Simulation(strategy: .random).run(seed: 7, AsyncScenarios.everyKindOfJob)
            return (first, (0..<10).map { _ in Simulation.replay(first.token, AsyncScenarios.everyKindOfJob) })
        }
        #expect(first.passed, "\(first.failure?.description ?? "")")
        #expect(replays.allSatisfy { $0.passed && $0.traceHash == first.traceHash && $0.steps == first.steps },
            "\(replays.map { ($0.traceHash, $0.failure?.description ?? "passed") })")
    }

    /// A sleep until `now + d` reaches the executor a little less than `d` before its deadline:
    /// rounding gives `d` back, unless the real time between the two reads exceeds the rounding.
    @Test func aSleepsDelayIsRoundedBackToWhatWasAsked() {
        let rounded = SimulationTaskExecutor.rounded
        #expect(rounded(.seconds(1_800) - .milliseconds(20)) == .seconds(1_800))
        #expect(rounded(.milliseconds(10) - .microseconds(30)) == .milliseconds(10))
        #expect(rounded(.microseconds(300)) == .milliseconds(1))
        #expect(rounded(.milliseconds(1_234)) == .milliseconds(1_240))
        #expect(rounded(.zero) == .zero)
        #expect(rounded(.milliseconds(-5)) == .zero)
        // "Sleep until cancelled" idioms: centuries saturate instead of overflowing (they trapped).
        #expect(rounded(.nanoseconds(Int64.max)) == .nanoseconds(Int64.max))
        #expect(rounded(.seconds(31_536_000_000)) == .nanoseconds(Int64.max))  // 1,000 years
        #expect(rounded(.seconds(3_153_600_000)) >= .seconds(3_153_600_000))  // 100 years
    }

    @Test func aFailedCheckInsideATaskFailsTheRun() async throws {
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 0) {
                await Task { Simulation.check(1 + 1 == 3, "arithmetic in a task") }.value
            }
        }
        let failure = try #require(result.failure)
        #expect(failure.kind == "failed check")
        #expect(failure.report.contains("arithmetic in a task"), "\(failure.report)")
        #expect(failure.replayLine.contains("replay: sim1:random:0:"), "\(failure.replayLine)")
    }

    /// A continuation never resumed: nothing can move, and the report names the stranded task.
    @Test func aContinuationNeverResumedIsADeadlockNamingTheSuspendedTasks() async throws {
        let (result, replay) = await offThePool { () -> (SimulationResult, SimulationResult?) in
            let result = Simulation(strategy: .random).run(seed: 3, AsyncScenarios.continuationNeverResumed)
            return (result, result.failure.map { _ in Simulation.replay(result.token, AsyncScenarios.continuationNeverResumed) })
        }
        let failure = try #require(result.failure, "the run passed")
        #expect(failure.kind == "deadlock")
        #expect(failure.report.contains("the scenario's task never finished"), "\(failure.report)")
        #expect(failure.report.contains("task 1 (the scenario's): not seen to finish; last ran on T"), "\(failure.report)")
        #expect(failure.report.contains("task 2: "), "\(failure.report)")
        #expect(failure.report.contains("started by task 1 on T"), "\(failure.report)")
        #expect(!failure.report.contains("holds queue"), "an idle worker reported as holding its queue:\n\(failure.report)")
        #expect(replay?.traceHash == result.traceHash && replay?.failure?.report == failure.report)
        print("continuation never resumed:\n\(failure.report)")
    }

    /// A continuation of a task of the run resumed by a thread outside it (a Foundation `Thread`,
    /// not started through the runtime): the job would run unseen, so the run ends. The outside
    /// thread waits a while of real time so that the task has suspended; on a loaded machine it
    /// may resume first, and then no job is enqueued at all (the task goes on without suspending)
    /// and the run passes: it is tried again with a longer wait. No job may ever run unseen.
    @Test func aContinuationResumedFromOutsideTheRunEndsItAsEscaped() async throws {
        var outcomes: [String] = []
        for wait: UInt32 in [20_000, 200_000, 1_000_000] {
            let result = await offThePool { Simulation(strategy: .random).run(seed: 0, Self.resumedFromOutside(after: wait)) }
            guard let failure = result.failure else {
                outcomes.append("passed (resumed before the task suspended, \(wait) µs)")
                continue
            }
            #expect(failure.kind == "escaped job", "\(failure.kind): \(failure.report)")
            #expect(failure.report.contains("enqueued from a thread outside the run"), "\(failure.report)")
            return
        }
        Issue.record("the resume from outside never came after the task suspended: \(outcomes)")
    }

    private static func resumedFromOutside(after wait: UInt32) -> @Sendable () async -> Void {
        {
            let resumed = OutsideFlag()
            Task {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    Thread.detachNewThread {
                        usleep(wait)
                        continuation.resume()
                        resumed.value.store(true, ordering: .releasing)
                    }
                }
            }
            // Keeps the run busy (real time passes, each clock read a scheduling point) until the
            // resume came, for at most 5,000 rounds: quiescence would otherwise end it first.
            var rounds = 0
            while !resumed.value.load(ordering: .acquiring) && rounds < 5_000 {
                _ = MonotonicInstant.now()
                usleep(1_000)
                rounds += 1
            }
        }
    }

    /// A double resume traps (the runtime's misuse check), and the trap prints the replay line.
    @Test func aDoubleResumeTrapsWithTheReplayLine() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Simulation(strategy: .random).run(seed: 0) {
                let queue = SerialQueue(label: "twice")
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    queue.async {
                        continuation.resume()
                        continuation.resume()
                    }
                }
            }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("resume") && text.contains("replay: sim1:random:0:"), "\(text)")
    }

    /// `cancelAll()` on a group whose child sleeps: the runtime enqueues the child's job while it
    /// holds the child's status record lock. Were that enqueue's seam operations scheduling points,
    /// a thread picked there could block on the lock outside the seam (the child's thread resuming
    /// from its sleep), and the run would end `stuck` (10 of the first 48 seeds of the user-bug
    /// table's deadline scenario did, after 30 s each). A stall of 3 s counts as stuck here.
    @Test func cancellingASleepingChildNeverLeavesARunStuck() async {
        let limits = { () -> SimulationLimits in
            var limits = SimulationLimits()
            limits.stallSeconds = 3
            return limits
        }()
        let outcomes = await offThePool {
            (0..<UInt64(48)).map { seed in
                SimulationRun.execute(
                    SimulationScheduler(strategy: .random, seed: seed), limits: limits, taskThreads: 2,
                    AsyncScenarios.sleepingChildCancelled)
            }
        }
        let failed = outcomes.filter { $0.failure != nil }
        #expect(failed.isEmpty, "\(failed.count) of 48 failed: \(failed.map { $0.failure!.line + " " + $0.failure!.message })")
    }

    /// A small async scenario stays small: the run's own task pool does not spin, and a spinning
    /// pool thread looks once per clock read in simulation builds. With both undone, spin windows
    /// made 1,515–2,256 scheduling points of each of these runs (16 looks at two seam atomics per
    /// clock read); now 237–304.
    @Test func aSmallAsyncScenarioTakesFewSchedulingPoints() async {
        let report = await offThePool { Simulation(strategy: .random).explore(seeds: 0..<20, AsyncScenarios.small) }
        let steps = report.results.map(\.steps)
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
        #expect(steps.allSatisfy { $0 < 500 }, "scheduling points per run: \(steps)")
    }

    /// Two report flaws: a failed check no longer hides a later deadlock of the same run, and an
    /// idle dedicated worker is not reported as holding its queue.
    @Test func aFailedCheckThenADeadlockReportsBoth() async throws {
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 0) {
                let queue = SerialQueue(label: "idle-worker")
                queue.sync {}
                Simulation.check(false, "first the check")
                Mailbox().take()  // nobody posts
            }
        }
        let failure = try #require(result.failure)
        #expect(failure.kind == "failed check")
        #expect(failure.report.contains("first the check"), "\(failure.report)")
        #expect(failure.report.contains("then, at step") && failure.report.contains("deadlock"), "\(failure.report)")
        #expect(failure.report.contains("the idle worker of queue \"idle-worker\""), "\(failure.report)")
        #expect(!failure.report.contains("holds queue \"idle-worker\""), "\(failure.report)")
    }
}

/// Schedules per second for a small async scenario (two child tasks on an actor, a continuation
/// and a sleep: about 200 scheduling points); `SERIAL_SIMULATION_THROUGHPUT=N` runs N seeds.
@Suite struct AsyncSimulationThroughputTests {
    static let seeds = getenv("SERIAL_SIMULATION_THROUGHPUT").flatMap { UInt64(String(cString: $0)) }

    @Test(.enabled(if: Self.seeds != nil))
    func schedulesPerSecondOfASmallAsyncScenario() async {
        let seeds = Self.seeds ?? 0
        let (report, elapsed) = await offThePool { () -> (SimulationReport, Duration) in
            let started = ContinuousClock.now
            let report = Simulation(strategy: .random).explore(seeds: 0..<seeds, AsyncScenarios.small)
            return (report, ContinuousClock.now - started)
        }
        let (seconds, attoseconds) = elapsed.components
        let total = Double(seconds) + Double(attoseconds) / 1e18
        let steps = report.results.map(\.steps)
        print("async throughput: \(seeds) schedules in \(elapsed), \(Int(Double(seeds) / total)) per second; "
            + "steps \(steps.min() ?? 0)…\(steps.max() ?? 0), mean \(steps.reduce(0, +) / max(1, steps.count))")
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
    }
}

/// Async scenarios shared by the tests and the catalogue.
enum AsyncScenarios {
    /// Every kind of job a run must own, and an hour of sleeps.
    static let everyKindOfJob: @Sendable () async -> Void = {
        let counter = CountingActor()
        let callbacks = SerialQueue(label: "sim-callbacks")
        let onRunThreads = Atomic<Int>(0)
        let note: @Sendable () -> Void = {
            if SimulationRun.isSimulatedThread { onRunThreads.add(1, ordering: .relaxed) }
        }
        let started = MonotonicInstant.now()
        note()
        let unstructured = Task {
            note()
            return await counter.add()
        }
        let detached = Task.detached {
            note()
            try? await Task.sleep(for: .seconds(1_800))
            return await counter.add()
        }
        let answer: Int = await withCheckedContinuation { continuation in
            callbacks.async { continuation.resume(returning: 42) }
        }
        note()
        try? await Task.sleep(for: .seconds(3_600))
        note()
        let values = [await unstructured.value, await detached.value]
        Simulation.check(answer == 42, "the continuation returned \(answer)")
        Simulation.check(values.sorted() == [1, 2], "the actor counted \(values)")
        Simulation.check(onRunThreads.load(ordering: .relaxed) == 5, "\(5 - onRunThreads.load(ordering: .relaxed)) of 5 jobs ran off the run's threads")
        let elapsed = started.duration(to: .now())
        Simulation.check(elapsed >= .seconds(3_600), "slept \(elapsed) of virtual time, not an hour")
    }

    /// About 200 scheduling points: two children on an actor, a continuation, a sleep.
    static let small: @Sendable () async -> Void = {
        let counter = CountingActor()
        async let first = counter.add()
        async let second = counter.add()
        let values = await [first, second]
        try? await Task.sleep(for: .milliseconds(1))
        Simulation.check(values.sorted() == [1, 2], "the actor counted \(values)")
    }

    /// A group of a slow and a quick sleeper: the slow one is cancelled in its sleep.
    static let sleepingChildCancelled: @Sendable () async -> Void = {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: .seconds(60)) }
            group.addTask { try? await Task.sleep(for: .seconds(1)) }
            await group.next()
            group.cancelAll()
        }
    }

    static let continuationNeverResumed: @Sendable () async -> Void = {
        let queue = SerialQueue(label: "sim-forgetful")
        queue.sync {}
        await Task {
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in
                queue.async {}  // the callback forgets to resume
            }
        }.value
    }
}

final class OutsideFlag: Sendable {
    let value = Atomic<Bool>(false)
}

actor CountingActor {
    private var value = 0
    func add() -> Int {
        self.value += 1
        return self.value
    }
}
#endif
