#if SERIAL_SIMULATION
@testable import SerialCore
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// The three fixes of attack 45 (5032c24, bdbb634, dfb9b7b) on virtual time, each written from the
/// promise it keeps; each fails on its mutant (`Verification/simulation-mutants/`), the code before
/// the fix. Reports are checked with `Attack44Scenarios.Waits`: every waiting report a lower bound
/// of a real wait, and a wait of its own.
enum Attack45Scenarios {
    typealias Waits = Attack44Scenarios.Waits

    /// 5032c24. `StallWatchdog` "reports, once per stall, any queue … whose oldest waiting item has
    /// not started within `waitingThreshold`"; `QueueCounters.returned`: "When none came back (the
    /// `sync` turn was the batch's last item), the FIFO's own wait goes on". A pooled queue is
    /// suspended while B and then a `sync` turn S (from another thread) enter; resumed, one turn
    /// takes the batch [B, S]. S waits behind B until its wait is reported (threshold 1 ms,
    /// interval 200 µs); then B queues X, which enters the empty FIFO, and ends. The pool thread
    /// hands the queue to S's caller with nothing of the batch to return, and S's body holds it
    /// 3 ms: X waits through it, a wait of its own, which must be reported once, as a lower bound.
    /// (Before the fix X's wait was timed from the batch's take, the start the watchdog had just
    /// reported for S: X was never reported.)
    static let waitBehindAHandOffThatReturnsNothing: @Sendable () -> Void = {
        let waits = Waits()
        let watchdog = Attack44Scenarios.watchdog(waits, label: "a45-ho")
        let pool = WorkerPool(threads: 2, label: "a45-ho-pool")
        let q = SerialQueue(label: "a45-ho", pool: pool)
        let caller = SerialQueue(label: "a45-ho-caller")
        watchdog.watch(q)
        let syncWaitsBefore = q.statistics.syncWaits
        let sReported = ScenarioBox(false)
        q.suspend()
        waits.begin(1)
        q.async {  // B
            waits.end(1)
            let started = Waits.now()
            var pauses = 0
            while !waits.reports.contains(where: { $0.kind == .waiting && $0.at >= started }) && pauses < 100 {
                PromiseScenarios.pause(.microseconds(100))
                pauses += 1
            }
            sReported.value = waits.reports.contains { $0.kind == .waiting && $0.at >= started }
            waits.begin(3)
            q.async { waits.end(3) }  // X: enters the empty FIFO while B runs
        }
        caller.async {
            waits.begin(2)
            q.sync {  // S
                waits.end(2)
                PromiseScenarios.pause(.milliseconds(3))
            }
        }
        var reads = 0
        while q.statistics.syncWaits == syncWaitsBefore && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        Simulation.check(q.statistics.syncWaits == syncWaitsBefore + 1, "S's caller did not queue within 5,000 clock reads")
        q.resume()
        caller.sync {}
        q.sync {}
        watchdog.stop()
        Simulation.check(
            sReported.value, "setup: S, waiting behind B in its batch (threshold 1 ms), was not reported within 10 ms: \(waits.summary)")
        waits.checkReports("hand-off returning nothing")
        let afterX = waits.begun[3].map { begun in waits.reports.filter { $0.kind == .waiting && $0.at >= begun } } ?? []
        Simulation.check(
            afterX.count == 1,
            "X entered q's empty FIFO while B ran, then waited about 3 ms behind S's body (S handed over with nothing of its batch to return; threshold 1 ms): expected one waiting report after X entered, got \(afterX.count): \(waits.summary)")
        pool.shutdown()
    }

    /// bdbb634. `StallWatchdog` reports "any queue … whose oldest waiting item has not started
    /// within `waitingThreshold`"; "Limits": "Delayed work is an item once it has fallen due and
    /// entered the FIFO (a pooled queue's enters at its deadline, suspended or not)". The watchdog
    /// sleeps armed on an idle pooled queue, which is suspended *before* `asyncAfter` schedules
    /// work due 1 ms later; the queue stays suspended 6 ms. The due work must enter the FIFO at its
    /// deadline (depth 1) and be reported as waiting (threshold 1 ms), as a lower bound; it runs
    /// once the queue resumes. (Before the fix a suspended pooled queue never armed the pool's
    /// timer: the work stayed in the delayed heap, depth 0, unreported.)
    static let dueWorkOnAPooledQueueSuspendedBeforeItWasScheduled: @Sendable () -> Void = {
        let waits = Waits()
        let watchdog = Attack44Scenarios.watchdog(waits, label: "a45-susp")
        let pool = WorkerPool(threads: 1, label: "a45-susp-pool")
        let q = SerialQueue(label: "a45-susp", pool: pool)
        watchdog.watch(q)
        var reads = 0
        while !watchdog._isAsleep && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        Simulation.check(watchdog._isAsleep, "the watchdog did not go to sleep over an idle queue")
        q.suspend()
        let due = MonotonicInstant.now().advanced(by: .milliseconds(1))
        _ = q.asyncAfter(deadline: due) { waits.end(1) }
        waits.begun[1] = due.nanoseconds
        PromiseScenarios.pause(.milliseconds(6))
        let reported = waits.reports.contains { $0.kind == .waiting }
        let depth = q.statistics.depth
        q.resume()
        q.sync {}
        watchdog.stop()
        Simulation.check(
            reported && depth == 1,
            "delayed work scheduled on a pooled queue already suspended fell due and waited 5 ms (threshold 1 ms): expected it in the FIFO (depth 1) and reported as waiting; depth then \(depth), \(waits.summary)")
        Simulation.check(waits.ended[1] != nil, "the due work did not run after the queue resumed")
        waits.checkReports("due on a pooled queue suspended first")
        pool.shutdown()
    }

    /// A capture whose release holds the thread that releases it for `duration`.
    final class SlowRelease: Sendable {
        let duration: Duration
        let released: ConditionLock<Bool>
        init(_ duration: Duration, released: ConditionLock<Bool>) {
            self.duration = duration
            self.released = released
        }
        deinit {
            PromiseScenarios.pause(self.duration)
            self.released.withLockThenBroadcast { $0 = true }
        }
    }

    /// dfb9b7b. `StallWatchdog` "reports, once per stall, any queue whose running work has not
    /// finished within `runningThreshold`"; `StallDetector`: "a look that finds it not running ends
    /// the stretch: work that runs again at the same count is a new stall". Item A's only capture
    /// takes 3 ms to release: the worker releases it after A's count moved, holding the queue, and
    /// is reported running (threshold 1 ms, interval 200 µs). The queue then goes idle for 1 ms
    /// (the looks see it not running), and item L runs 3 ms at that same count (nothing finished in
    /// between). L's stall is a new one: it must be reported once. (Before the fix the detector
    /// kept the count it had reported across the idle spell, and L was never reported: the flake of
    /// `PostFixAttackTests.threeWatchdogsRacingWatchAndStopWatchingEachEndArmedAndReport`.)
    static func runningStallAgainAtTheReportedCount(pooled: Bool) -> @Sendable () -> Void {
        {
            // (kind, virtual time, q's executed count when the report was made)
            let reports = ScenarioBox([(kind: StallWatchdog.Stall.Kind, at: UInt64, executed: Int)]())
            let qBox = ScenarioBox<SerialQueue?>(nil)
            let watchdog = StallWatchdog(
                runningThreshold: .milliseconds(1), waitingThreshold: .seconds(60), checkInterval: .microseconds(200)
            ) { stall in
                guard stall.queueLabel == "a45-again" else { return }
                reports.value.append((stall.kind, Waits.now(), qBox.value?.statistics.executed ?? -1))
            }
            let pool = pooled ? WorkerPool(threads: 2, label: "a45-again-pool") : nil
            let q = pool.map { SerialQueue(label: "a45-again", pool: $0) } ?? SerialQueue(label: "a45-again")
            qBox.value = q
            watchdog.watch(q)
            let released = ConditionLock(false)
            // A: its closure holds the only reference to the capture, released by the worker (the
            // queue is suspended until this thread has let go of the closure it passed).
            q.suspend()
            q.async { [capture = SlowRelease(.milliseconds(3), released: released)] in _ = capture }
            q.resume()
            let end = released.wait(until: .now() + .seconds(60)) { $0 ? true : nil }
            Simulation.check(end != nil, "A's capture was not released within 60 s of virtual time")
            // The report may reach its callback after the release ended: wait for it (10 ms at most).
            var pauses = 0
            while !reports.value.contains(where: { $0.kind == .running }) && pauses < 100 {
                PromiseScenarios.pause(.microseconds(100))
                pauses += 1
            }
            let first = reports.value.filter { $0.kind == .running }
            PromiseScenarios.pause(.milliseconds(1))  // idle: the looks see q not running
            let before = reports.value.count
            let lRunsAt = ScenarioBox(-1)
            q.async {  // L
                lRunsAt.value = q.statistics.executed
                PromiseScenarios.pause(.milliseconds(3))
            }
            q.sync {}
            watchdog.stop()
            qBox.value = nil
            let describe = { (entries: ArraySlice<(kind: StallWatchdog.Stall.Kind, at: UInt64, executed: Int)>) in
                entries.map { "\($0.kind) at \($0.at / 1_000) µs, executed \($0.executed)" }.joined(separator: "; ")
            }
            Simulation.check(
                first.count == 1,
                "setup: the worker held q 3 ms releasing A's capture after A's count moved (threshold 1 ms): expected one running report within 10 ms of the release's end, got \(first.count): [\(describe(reports.value[...]))]")
            let later = reports.value[before...].filter { $0.kind == .running }
            Simulation.check(
                later.count == 1,
                "L ran 3 ms (threshold 1 ms) at executed \(lRunsAt.value) after q was idle 1 ms (pooled: \(pooled)): expected one running report of it, got \(later.count); all reports: [\(describe(reports.value[...]))]")
            pool?.shutdown()
        }
    }
}

@Suite struct Attack45ScenarioTests {
    /// Seeds per test: 50, or `ATTACK45_SEEDS`.
    static var seedCount: UInt64 { UInt64(getenv("ATTACK45_SEEDS").flatMap { Int(String(cString: $0)) } ?? 50) }

    static func explore(_ name: String, _ scenario: @escaping @Sendable () -> Void) async -> SimulationReport {
        let report = await offThePool { Simulation(strategy: .random).explore(name, seeds: 0..<Self.seedCount, scenario) }
        print("\(name): \(report.failures.count) of \(report.results.count) schedules failed")
        for failure in report.failures.prefix(2) { print("  \(failure.failure!.description)") }
        return report
    }

    @Test func aWaitBehindAHandOffThatReturnsNothingIsReportedOnce() async {
        let report = await Self.explore("a45-ho", Attack45Scenarios.waitBehindAHandOffThatReturnsNothing)
        #expect(report.failures.isEmpty, "\(report.failures.count) failed; first: \(report.failures.first.map { $0.failure!.description } ?? "")")
    }

    @Test func dueWorkOnAPooledQueueSuspendedBeforeItWasScheduledIsReported() async {
        let report = await Self.explore("a45-susp", Attack45Scenarios.dueWorkOnAPooledQueueSuspendedBeforeItWasScheduled)
        #expect(report.failures.isEmpty, "\(report.failures.count) failed; first: \(report.failures.first.map { $0.failure!.description } ?? "")")
    }

    @Test(arguments: [false, true])
    func aRunningStallAgainAtTheReportedCountIsReported(pooled: Bool) async {
        let report = await Self.explore("a45-again-\(pooled)", Attack45Scenarios.runningStallAgainAtTheReportedCount(pooled: pooled))
        #expect(report.failures.isEmpty, "\(report.failures.count) failed; first: \(report.failures.first.map { $0.failure!.description } ?? "")")
    }
}
#endif
