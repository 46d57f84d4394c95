import Glibc
import SerialCore
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// Timers and timeouts under contention: several threads (more than the cores) schedule and
/// cancel while the scheduler fires; every timer and task must end exactly once.
/// Seeded (`STRESS_SEED`), bounded (`STRESS_SCALE`), every wait with a timeout.
@Suite("Timers stress")
struct TimersStressTests {
    static let threads = 6

    /// Per-id counters, so a double fire or a fire after a successful cancel is caught by id.
    final class Tally: Sendable {
        let fired: LockedValue<[UInt8]>
        let cancelled: LockedValue<[UInt8]>
        let early = TestCounter()

        init(count: Int) {
            self.fired = LockedValue(Array(repeating: 0, count: count))
            self.cancelled = LockedValue(Array(repeating: 0, count: count))
        }

        func fire(_ id: Int) { self.fired.withLock { $0[id] &+= 1 } }
        func cancel(_ id: Int) { self.cancelled.withLock { $0[id] &+= 1 } }

        /// Ids whose fired + cancelled count is not exactly `expected`.
        func wrong(expected: (Int) -> Bool) -> [Int] {
            let fired = self.fired.withLock { $0 }
            let cancelled = self.cancelled.withLock { $0 }
            return fired.indices.filter { !expected(Int(fired[$0]) + Int(cancelled[$0])) }
        }
    }

    /// Default, precise (zero and under a tick) and coalesced, for a 100–200 µs tick.
    static func randomTolerance(_ random: inout SeededRandom) -> Duration? {
        [nil, .zero, .microseconds(50), .milliseconds(1)][Int.random(in: 0..<4, using: &random)]
    }

    @Test(.serialized, arguments: QueueMode.allCases) func scheduleAndCancelFromManyThreadsWhileTimersFireEachTimerEndsExactlyOnce(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perThread = StressConfiguration.iterations(3_000)
            let queue = mode.queue(label: "stress-timers")
            let timers = TimerService(scheduler: queue, tick: .microseconds(200), callbacksPerTurn: 64)
            let tally = Tally(count: Self.threads * perThread)
            let scheduled = TestCounter()
            withWatchdog(timeout: .seconds(120), "timers stress, seed \(seed)") {
                runThreads(Self.threads) { thread in
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    var held: [(Int, TimerHandle)] = []
                    for step in 0..<perThread {
                        let id = thread * perThread + step
                        let delay = Duration.microseconds(Int64.random(in: -100..<4_000, using: &random))
                        let deadline = MonotonicInstant.now() + delay
                        guard let handle = try? timers.schedule(at: deadline, tolerance: Self.randomTolerance(&random), {
                            if MonotonicInstant.now() < deadline { tally.early.increment() }
                            tally.fire(id)
                        }) else { continue }
                        scheduled.increment()
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0: if handle.cancel() { tally.cancel(id) }      // at once
                        case 1: held.append((id, handle))                  // later, racing the deadline
                        default: break                                      // let it fire
                        }
                        if held.count > 16 || (step % 64 == 0 && !held.isEmpty) {
                            let (heldID, heldHandle) = held.removeFirst()
                            if heldHandle.cancel() { tally.cancel(heldID) }
                            if heldHandle.cancel() { tally.cancel(heldID) }  // a second cancel must never succeed
                        }
                    }
                    for (heldID, heldHandle) in held where heldHandle.cancel() { tally.cancel(heldID) }
                }
                #expect(
                    eventually(timeout: .seconds(30)) { timers.pendingCount == 0 },
                    "seed \(seed): \(timers.pendingCount) timers still pending 30 s after the last one was scheduled")
                // Let the last turn finish running its batch.
                let drained = TestSemaphore()
                queue.async { drained.signal() }
                #expect(drained.wait(timeout: .seconds(30)), "seed \(seed): the queue did not drain")
            }
            #expect(scheduled.value == Self.threads * perThread, "seed \(seed)")
            let wrong = tally.wrong { $0 == 1 }
            #expect(wrong.isEmpty, "seed \(seed): \(wrong.count) timers did not end exactly once, e.g. ids \(wrong.prefix(10))")
            #expect(tally.early.value == 0, "seed \(seed): \(tally.early.value) timers fired before their deadline")
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func stopRacingScheduleCancelAndFiringAccountsForEveryTimer(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perThread = StressConfiguration.iterations(2_000)
            let queue = mode.queue(label: "stress-stop")
            let timers = TimerService(scheduler: queue, tick: .microseconds(100), callbacksPerTurn: 16)
            let tally = Tally(count: Self.threads * perThread)
            let accepted = TestCounter()
            let refused = TestCounter()
            let droppedByStop = TestCounter()
            withWatchdog(timeout: .seconds(120), "timers stop stress, seed \(seed)") {
                runThreads(Self.threads + 1) { thread in
                    if thread == Self.threads {
                        // The stopper: lets some timers fire, then stops in the middle of it all.
                        var random = SeededRandom(seed: seed &+ 99)
                        let pause = UInt64.random(in: 1_000_000..<20_000_000, using: &random)
                        let start = monotonicNow()
                        while monotonicNow() - start < pause { sched_yield() }
                        droppedByStop.increment(by: timers.stop())
                        return
                    }
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    for step in 0..<perThread {
                        let id = thread * perThread + step
                        let delay = Duration.microseconds(Int64.random(in: 0..<3_000, using: &random))
                        do throws(TimerServiceError) {
                            let handle = try timers.schedule(after: delay) { tally.fire(id) }
                            accepted.increment()
                            if Bool.random(using: &random), handle.cancel() { tally.cancel(id) }
                        } catch {
                            #expect(error == .stopped, "seed \(seed)")
                            refused.increment()
                        }
                    }
                }
                let drained = TestSemaphore()
                queue.async { drained.signal() }
                #expect(drained.wait(timeout: .seconds(30)), "seed \(seed): the queue did not drain")
            }
            #expect(timers.pendingCount == 0)
            let fired = tally.fired.withLock { $0.reduce(0) { $0 + Int($1) } }
            let cancelled = tally.cancelled.withLock { $0.reduce(0) { $0 + Int($1) } }
            #expect(
                fired + cancelled + droppedByStop.value == accepted.value,
                "seed \(seed): fired \(fired) + cancelled \(cancelled) + dropped by stop \(droppedByStop.value) != accepted \(accepted.value)")
            #expect(accepted.value + refused.value == Self.threads * perThread)
            let wrong = tally.wrong { $0 <= 1 }
            #expect(wrong.isEmpty, "seed \(seed): timers fired or were cancelled twice: \(wrong.prefix(10))")
            let statistics = timers.serviceStatistics
            #expect(
                statistics.accepted == accepted.value && statistics.ended == accepted.value && statistics.pending == 0,
                "seed \(seed): service statistics \(statistics), accepted \(accepted.value)")
            #expect(
                statistics.outcomes["fired"] == fired && statistics.outcomes["cancelled"] == cancelled
                    && statistics.outcomes["stopped"] == droppedByStop.value,
                "seed \(seed): outcomes \(statistics.outcomes), fired \(fired), cancelled \(cancelled)")
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func timeoutTasksRacingTheirResultsGetExactlyOneOutcomePerCaller(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perThread = StressConfiguration.iterations(1_500)
            let callbacks = mode.queue(label: "stress-to-cb")
            let reporters = (0..<2).map { mode.queue(label: "stress-rep-\($0)") }
            let manager = TimeoutManager<Int>(scheduler: callbacks, workerCount: 2, label: "stress-to", tick: .microseconds(200))
            let outcomes = LockedValue<[UInt8]>(Array(repeating: 0, count: Self.threads * perThread))
            let timedOut = TestCounter()
            let completed = TestCounter()
            let started = TestCounter()
            let allDone = TestSemaphore()
            let total = Self.threads * perThread
            let delivered = TestCounter()
            withWatchdog(timeout: .seconds(120), "timeout stress, seed \(seed)") {
                runThreads(Self.threads) { thread in
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    for step in 0..<perThread {
                        let caller = thread * perThread + step
                        let timeout = Duration.microseconds(Int64.random(in: 0..<1_000, using: &random))
                        let resultDelay = Duration.microseconds(Int64.random(in: 0..<1_000, using: &random))
                        let reporter = reporters[caller % 2]
                        // A few shared keys so callers join tasks in flight from other threads.
                        let key: String? = Int.random(in: 0..<4, using: &random) == 0 ? "k\(caller % 5)" : nil
                        do {
                            let start = try manager.start(taskKey: key, timeout: timeout, operation: { completion in
                                reporter.asyncAfter(delay: resultDelay) { completion.succeed(caller) }
                            }) { outcome in
                                outcomes.withLock { $0[caller] &+= 1 }
                                if outcome.isTimedOut { timedOut.increment() } else { completed.increment() }
                                if delivered.increment() == total { allDone.signal() }
                            }
                            if start == .started { started.increment() }
                        } catch {
                            Issue.record("seed \(seed): start threw \(error)")
                        }
                    }
                }
                #expect(allDone.wait(timeout: .seconds(60)), "seed \(seed): only \(delivered.value) of \(total) outcomes arrived")
                for reporter in reporters { reporter.shutdown() }
            }
            let counts = outcomes.withLock { $0 }
            let wrong = counts.indices.filter { counts[$0] != 1 }
            #expect(wrong.isEmpty, "seed \(seed): callers without exactly one outcome: \(wrong.prefix(10))")
            #expect(timedOut.value + completed.value == total)
            #expect(manager.inFlightCount == 0)
            // Every started task has one result report; it either won or was counted late.
            #expect(
                eventually(timeout: .seconds(10)) { manager.lateResultCount <= started.value },
                "seed \(seed): late results \(manager.lateResultCount) exceed started tasks \(started.value)")
        }
    }

    /// Shuts the timers' SerialQueue down at a random moment (.drain or .cancelPending) while
    /// threads schedule: every accepted timer ends exactly once, `.fired` (its callback ran
    /// once) or `.schedulerShutDown`; every refused call threw `.schedulerShutDown`.
    @Test func queueShutdownAtRandomMomentsEndsEveryPendingTimerOnce() async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let rounds = StressConfiguration.iterations(20)
            let perThread = 300
            var random = SeededRandom(seed: seed)
            withWatchdog(timeout: .seconds(120), "timers shutdown stress, seed \(seed)") {
                for round in 0..<rounds {
                    let mode: ShutdownMode = Bool.random(using: &random) ? .drain : .cancelPending
                    let pause = UInt64.random(in: 0..<3_000_000, using: &random)
                    let roundSeed = random.next()
                    let label = "stress-timers-down-\(round)"
                    let queue = SerialQueue(label: label)
                    let timers = TimerService(scheduler: queue, tick: .microseconds(100), callbacksPerTurn: 8)
                    let tally = Tally(count: Self.threads * perThread)
                    let handles = LockedValue<[(Int, TimerHandle)]>([])
                    let refused = TestCounter()
                    runThreads(Self.threads + 1) { thread in
                        if thread == Self.threads {
                            let start = monotonicNow()
                            while monotonicNow() - start < pause { sched_yield() }
                            queue.shutdown(mode)
                            return
                        }
                        var random = SeededRandom(seed: roundSeed &+ UInt64(thread))
                        for step in 0..<perThread {
                            let id = thread * perThread + step
                            let delay = Duration.microseconds(Int64.random(in: 0..<4_000, using: &random))
                            do throws(TimerServiceError) {
                                let handle = try timers.schedule(after: delay) { tally.fire(id) }
                                handles.withLock { $0.append((id, handle)) }
                            } catch {
                                #expect(error == .schedulerShutDown(.shutDown(scheduler: label)), "seed \(seed) round \(round)")
                                refused.increment()
                            }
                        }
                    }
                    // shutdown() returned: the handlers ran, every turn is over.
                    let accepted = handles.withLock { $0 }
                    var firedStatus = 0
                    var shutDownStatus = 0
                    for (id, handle) in accepted {
                        switch handle.status {
                        case .fired:
                            firedStatus += 1
                            #expect(tally.fired.withLock { $0[id] } == 1, "seed \(seed) round \(round): timer \(id) fired \(tally.fired.withLock { $0[id] }) times")
                        case .schedulerShutDown(.shutDown(label)):
                            shutDownStatus += 1
                            #expect(tally.fired.withLock { $0[id] } == 0, "seed \(seed) round \(round): timer \(id) ran after ending unrun")
                        case let other:
                            Issue.record("seed \(seed) round \(round) (\(mode)): timer \(id) ended \(other)")
                        }
                    }
                    #expect(firedStatus + shutDownStatus == accepted.count, "seed \(seed) round \(round)")
                    #expect(accepted.count + refused.value == Self.threads * perThread, "seed \(seed) round \(round)")
                    #expect(timers.pendingCount == 0, "seed \(seed) round \(round)")
                }
            }
        }
    }

    /// Shuts the callbacks' SerialQueue down at a random moment while tasks are started and
    /// reported from other threads: every accepted caller gets exactly one outcome.
    @Test func queueShutdownAtRandomMomentsEndsEveryTimeoutTaskOnce() async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let rounds = StressConfiguration.iterations(20)
            let perThread = 200
            var random = SeededRandom(seed: seed)
            let reporter = SerialQueue(label: "stress-to-down-reporter")
            defer { reporter.shutdown() }
            withWatchdog(timeout: .seconds(120), "timeout shutdown stress, seed \(seed)") {
                for round in 0..<rounds {
                    let mode: ShutdownMode = Bool.random(using: &random) ? .drain : .cancelPending
                    let pause = UInt64.random(in: 0..<3_000_000, using: &random)
                    let roundSeed = random.next()
                    let label = "stress-to-down-\(round)"
                    let callbacks = SerialQueue(label: label)
                    let manager = TimeoutManager<Int>(scheduler: callbacks, workers: [reporter], tick: .microseconds(100))
                    let outcomes = LockedValue<[UInt8]>(Array(repeating: 0, count: Self.threads * perThread))
                    let accepted = TestCounter()
                    let refused = TestCounter()
                    let delivered = TestCounter()
                    runThreads(Self.threads + 1) { thread in
                        if thread == Self.threads {
                            let start = monotonicNow()
                            while monotonicNow() - start < pause { sched_yield() }
                            callbacks.shutdown(mode)
                            return
                        }
                        var random = SeededRandom(seed: roundSeed &+ UInt64(thread))
                        for step in 0..<perThread {
                            let caller = thread * perThread + step
                            let timeout = Duration.microseconds(Int64.random(in: 0..<2_000, using: &random))
                            let resultDelay = Duration.microseconds(Int64.random(in: 0..<2_000, using: &random))
                            let key: String? = Int.random(in: 0..<4, using: &random) == 0 ? "k\(caller % 5)" : nil
                            do throws(TimeoutManagerError) {
                                try manager.start(taskKey: key, timeout: timeout, operation: { completion in
                                    reporter.asyncAfter(delay: resultDelay) { completion.succeed(caller) }
                                }) { _ in
                                    outcomes.withLock { $0[caller] &+= 1 }
                                    delivered.increment()
                                }
                                accepted.increment()
                            } catch {
                                #expect(error == .schedulerShutDown(.shutDown(scheduler: label)), "seed \(seed) round \(round)")
                                refused.increment()
                            }
                        }
                    }
                    #expect(
                        eventually(timeout: .seconds(20)) { delivered.value >= accepted.value },
                        "seed \(seed) round \(round) (\(mode)): \(delivered.value) of \(accepted.value) outcomes arrived")
                    // Let late reports drain, then check nobody got two.
                    let drained = TestSemaphore()
                    reporter.asyncAfter(delay: .milliseconds(3)) { drained.signal() }
                    #expect(drained.wait(timeout: .seconds(20)), "seed \(seed): the reporter did not drain")
                    let counts = outcomes.withLock { $0 }
                    #expect(delivered.value == accepted.value, "seed \(seed) round \(round)")
                    #expect(counts.filter { $0 > 1 }.isEmpty, "seed \(seed) round \(round): a caller got two outcomes")
                    #expect(accepted.value + refused.value == Self.threads * perThread)
                    #expect(manager.inFlightCount == 0, "seed \(seed) round \(round)")
                    let statistics = manager.serviceStatistics
                    #expect(
                        statistics.pending == 0 && statistics.accepted == statistics.ended,
                        "seed \(seed) round \(round): service statistics \(statistics)")
                }
            }
        }
    }

    /// Threads re-arm timers while the queue fires them: every timer fires exactly once
    /// (never both deadlines, never neither), never before the deadline its last successful
    /// re-arm set, and once a re-arm says "fired at the old deadline" no later one moves it.
    @Test func reArmRacingTheFireFiresEachTimerExactlyOnce() async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perThread = StressConfiguration.iterations(400)
            let queue = SerialQueue(label: "stress-rearm")
            defer { queue.shutdown() }
            let timers = TimerService(scheduler: queue, tick: .microseconds(100), callbacksPerTurn: 32)
            let count = Self.threads * perThread
            let fired = LockedValue<[UInt8]>(Array(repeating: 0, count: count))
            let firedAt = LockedValue<[UInt64]>(Array(repeating: 0, count: count))
            let movedTo = LockedValue<[UInt64]>(Array(repeating: 0, count: count))
            let broken = TestCounter()
            withWatchdog(timeout: .seconds(120), "re-arm stress, seed \(seed)") {
                runThreads(Self.threads) { thread in
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    var handles: [(Int, TimerHandle)] = []
                    for step in 0..<perThread {
                        let id = thread * perThread + step
                        let delay = Duration.microseconds(Int64.random(in: 0..<2_000, using: &random))
                        guard let handle = try? timers.schedule(after: delay, {
                            fired.withLock { $0[id] &+= 1 }
                            firedAt.withLock { $0[id] = monotonicNow() }
                        }) else { Issue.record("seed \(seed): schedule failed"); return }
                        handles.append((id, handle))
                    }
                    var firedOld = Set<Int>()
                    for _ in 0..<(perThread * 8) {
                        let (id, handle) = handles[Int.random(in: 0..<handles.count, using: &random)]
                        let delay = Duration.microseconds(Int64.random(in: 0..<1_500, using: &random))
                        let deadline = MonotonicInstant.now() + delay
                        let tolerance = Bool.random(using: &random) ? Self.randomTolerance(&random) : nil
                        switch handle.reschedule(at: deadline, tolerance: tolerance) {
                        case .movedToNewDeadline:
                            if firedOld.contains(id) { broken.increment() }  // moved after it had fired
                            movedTo.withLock { $0[id] = deadline.nanoseconds }
                        case .firedAtOldDeadline:
                            firedOld.insert(id)
                        case .ended:
                            broken.increment()  // nothing cancels or stops here
                        }
                    }
                }
                #expect(
                    eventually(timeout: .seconds(30)) { fired.withLock { $0.allSatisfy { $0 >= 1 } } },
                    "seed \(seed): \(fired.withLock { $0.filter { $0 == 0 }.count }) timers never fired")
                let drained = TestSemaphore()
                queue.async { drained.signal() }
                #expect(drained.wait(timeout: .seconds(30)), "seed \(seed): the queue did not drain")
            }
            let counts = fired.withLock { $0 }
            let times = firedAt.withLock { $0 }
            let moves = movedTo.withLock { $0 }
            let twice = counts.indices.filter { counts[$0] != 1 }
            let early = counts.indices.filter { moves[$0] != 0 && times[$0] < moves[$0] }
            #expect(twice.isEmpty, "seed \(seed): timers not fired exactly once: \(twice.prefix(10))")
            #expect(early.isEmpty, "seed \(seed): timers fired before their re-armed deadline: \(early.prefix(10))")
            #expect(broken.value == 0, "seed \(seed): \(broken.value) re-arm answers contradicted the firing")
            #expect(timers.pendingCount == 0)
        }
    }
}
