#if SERIAL_SIMULATION
@testable import SerialCore
import Glibc
import Synchronization
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// Attack 46 on the sync pass (6460676, dc6ad7f): a returning `sync` body passes the queue
/// straight to the caller whose turn heads the FIFO. Promises attacked, on the simulator (each
/// scenario quotes its own): bounded queues' room, FIFO order with delayed work falling due,
/// `suspend` from another thread, shutdown's drain and handlers, the stall watchdog's reports.
enum Attack46Scenarios {
    /// Reads the clock until `condition` holds or 5,000 reads; checks that it did.
    static func waitUntil(_ what: String, _ condition: () -> Bool) {
        var reads = 0
        while !condition() && reads < 5_000 {
            _ = MonotonicInstant.now()
            reads += 1
        }
        Simulation.check(condition(), "\(what) within 5,000 clock reads")
    }

    static func makeQueue(_ label: String, pool: WorkerPool?, maximumQueued: Int = .max) -> SerialQueue {
        pool.map { SerialQueue(label: label, pool: $0, maximumQueued: maximumQueued) }
            ?? SerialQueue(label: label, maximumQueued: maximumQueued)
    }

    /// "a full queue makes the caller wait for room": a queue bounded at 1, a `sync` body runs,
    /// caller B's turn fills the FIFO, producer P waits for room. The body returns (passing to
    /// B), B returns. Expected: P is admitted and its item runs (the simulator reports a
    /// deadlock otherwise).
    static func aPassMakesRoomForAWaitingProducer(pooled: Bool) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "a46-room-pool") : nil
            let queue = Self.makeQueue("a46-room", pool: pool, maximumQueued: 1)
            let b = SerialQueue(label: "a46-room-b")
            let p = SerialQueue(label: "a46-room-p")
            let log = ScenarioLog()
            queue.sync {
                b.async { queue.sync { log.body(1) } }
                SyncHandOffScenarios.waitForSyncWaits(1, on: queue, "caller B")
                p.async { queue.async { log.body(2) } }
                Self.waitUntil("producer P waiting for room") { queue._roomWaiters == 1 }
            }
            b.sync {}
            p.sync {}
            queue.sync {}
            Simulation.check(log.entries == [1, 2], "ran \(log.entries) (expected [1, 2], pooled: \(pooled))")
            pool?.shutdown()
        }
    }

    /// "`body` starts after all work that entered the queue before this call … and before any
    /// work that enters after it": two threads call `sync` three times each (passing the queue
    /// between them) while a third posts `async` items and delayed work that falls due among
    /// them. Checked: each thread's items in order, one body at a time, every item ran, the
    /// counts exact.
    static func passesAmongAsyncAndDelayedWork(pooled: Bool) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "a46-mix-pool") : nil
            let queue = Self.makeQueue("a46-mix", pool: pool)
            let threads = (0..<3).map { SerialQueue(label: "a46-mix-\($0)") }
            let log = ScenarioLog()
            for (index, thread) in threads.enumerated() {
                thread.async {
                    for item in 0..<3 {
                        let entry = index * 100 + item
                        if index == 2 {
                            queue.async { log.body(entry) }
                            queue.asyncAfter(delay: .microseconds(3 + 5 * item)) { log.body(1_000 + item) }
                        } else {
                            queue.sync { log.body(entry) }
                        }
                    }
                }
            }
            for thread in threads { thread.sync {} }
            Self.waitUntil("the delayed work running") { log.entries.filter { $0 >= 1_000 }.count == 3 }
            queue.sync {}
            Simulation.check(log.mostInBody == 1, "\(log.mostInBody) bodies at once: \(log.entries)")
            for index in 0..<3 {
                let mine = log.entries.filter { $0 / 100 == index && $0 < 1_000 }
                Simulation.check(mine == [0, 1, 2].map { index * 100 + $0 }, "thread \(index) ran \(mine): \(log.entries)")
            }
            let delayed = log.entries.filter { $0 >= 1_000 }
            Simulation.check(delayed == [1_000, 1_001, 1_002], "delayed work ran \(delayed): \(log.entries)")
            let figures = queue.statistics
            Simulation.check(figures.executed == figures.submitted, "\(figures)")
            pool?.shutdown()
        }
    }

    /// `suspend()` from another thread racing a chain of passes: "Stops the queue from starting
    /// more work until a matching `resume()`." Two threads call `sync` twice each; a third
    /// suspends, reads `executed` (a turn counts as it is handed over, under the lock), waits
    /// 20 µs, reads it again, and resumes. Expected: no turn handed over while suspended.
    static func suspendFromAnotherThreadRacesThePass(pooled: Bool) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "a46-sus-pool") : nil
            let queue = Self.makeQueue("a46-sus", pool: pool)
            let callers = (0..<2).map { SerialQueue(label: "a46-sus-\($0)") }
            let suspender = SerialQueue(label: "a46-sus-s")
            let log = ScenarioLog()
            let during = Box<[(Int, Int)]>([])
            for (index, caller) in callers.enumerated() {
                caller.async { for item in 0..<2 { queue.sync { log.body(index * 10 + item) } } }
            }
            suspender.async {
                for _ in 0..<2 {
                    queue.suspend()
                    let before = queue.statistics.executed
                    PromiseScenarios.pause(.microseconds(20))
                    during.value.append((before, queue.statistics.executed))
                    queue.resume()
                }
            }
            for caller in callers { caller.sync {} }
            suspender.sync {}
            queue.sync {}
            for (before, after) in during.value {
                Simulation.check(before == after, "\(after - before) turns handed over while suspended (pooled: \(pooled)): \(log.entries)")
            }
            Simulation.check(log.entries.count == 4 && log.mostInBody == 1, "ran \(log.entries), \(log.mostInBody) at once")
            pool?.shutdown()
        }
    }

    /// "`.drain`: Run everything already enqueued"; "waiting `sync` callers still run"
    /// (`.cancelPending`); handlers run on the worker "as its last act". A body holds the queue;
    /// B's turn, item 101, C's turn queue behind it; another thread shuts the queue down while
    /// the body returns. Expected: B, (101), C, then the handler.
    static func shutdownRacingAChainOfPasses(pooled: Bool, mode: ShutdownMode) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "a46-shut-pool") : nil
            let queue = Self.makeQueue("a46-shut", pool: pool)
            let callers = (0..<2).map { SerialQueue(label: "a46-shut-\($0)") }
            let shutter = SerialQueue(label: "a46-shutter")
            let log = ScenarioLog()
            let subscription = queue.whenShutDown { _ in log.entries.append(-1) }
            queue.sync {
                callers[0].async { queue.sync { log.body(1) } }
                SyncHandOffScenarios.waitForSyncWaits(1, on: queue, "caller B")
                queue.async { log.body(101) }
                callers[1].async { queue.sync { log.body(2) } }
                SyncHandOffScenarios.waitForSyncWaits(2, on: queue, "caller C")
                shutter.async { queue.shutdown(mode) }
            }
            for caller in callers { caller.sync {} }
            shutter.sync {}
            let expected = mode == .drain ? [1, 101, 2, -1] : [1, 2, -1]
            let withoutDropped = mode == .drain ? log.entries : log.entries.filter { $0 != 101 }
            Simulation.check(
                withoutDropped == expected && log.mostInBody == 1,
                "ran \(log.entries) (expected \(expected), \(mode), pooled: \(pooled)), \(log.mostInBody) at once")
            let figures = queue.statistics
            Simulation.check(figures.executed + figures.dropped == figures.submitted, "\(figures)")
            _ = subscription
            pool?.shutdown()
        }
    }

    /// The stall watchdog: "reports, once per stall, … work running longer than
    /// `runningThreshold`" (with `threadID` the thread running it) and "any queue whose oldest
    /// waiting item has not started within `waitingThreshold`". A body passes the queue to B,
    /// whose body then hangs 5 ms; C's turn waits behind it. Expected: one running report naming
    /// B's thread, and C reported waiting once.
    static func aHungBodyAfterAPassIsReportedRunningOnItsThread(pooled: Bool) -> @Sendable () -> Void {
        {
            let reports = ReportLog()
            let watchdog = StallWatchdog(
                runningThreshold: .milliseconds(1), waitingThreshold: .milliseconds(1), checkInterval: .microseconds(200)
            ) { reports.all.append($0) }
            let pool = pooled ? WorkerPool(threads: 2, label: "a46-dog-pool") : nil
            let queue = Self.makeQueue("a46-dog", pool: pool)
            let callers = (0..<2).map { SerialQueue(label: "a46-dog-\($0)") }
            let bThread = Box<Int32>(0)
            var aThread: Int32 = 0
            watchdog.watch(queue)
            queue.sync {
                aThread = CurrentThreadID.systemID
                callers[0].async {
                    queue.sync {
                        bThread.value = CurrentThreadID.systemID
                        PromiseScenarios.pause(.milliseconds(5))
                    }
                }
                SyncHandOffScenarios.waitForSyncWaits(1, on: queue, "caller B")
                callers[1].async { queue.sync {} }
                SyncHandOffScenarios.waitForSyncWaits(2, on: queue, "caller C")
            }
            for caller in callers { caller.sync {} }
            queue.sync {}
            watchdog.stop()
            let mine = reports.all.filter { $0.queueLabel == "a46-dog" }
            let running = mine.filter { $0.kind == .running }
            let waiting = mine.filter { $0.kind == .waiting }
            // A's body may run past 1 ms while B queues (then A and B's wait are reported too).
            Simulation.check(
                running.filter { $0.threadID == bThread.value }.count == 1 && running.allSatisfy { $0.threadID == bThread.value || $0.threadID == aThread },
                "running reports \(running) (expected one naming B's thread \(bThread.value); A's is \(aThread), pooled: \(pooled))")
            Simulation.check(
                (1...2).contains(waiting.count), "waiting reports \(waiting) (expected C's once, and B's at most once; pooled: \(pooled))")
            pool?.shutdown()
        }
    }

    /// A pool thread blocked in `sync` (its pool's only thread: a stand-in keeps the width) is
    /// passed the queue by a body on another thread. Expected: the pool thread's body, then the
    /// queue's async item, one at a time; another queue of the pool runs meanwhile.
    static let aPoolThreadIsPassedTheQueueOnAOneThreadPool: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 1, label: "a46-one-pool")
        let q = SerialQueue(label: "a46-one-q", pool: pool)
        let r = SerialQueue(label: "a46-one-r", pool: pool)
        let s = SerialQueue(label: "a46-one-s", pool: pool)
        let log = ScenarioLog()
        let other = Mailbox()
        q.sync {
            r.async { q.sync { log.body(1) } }
            SyncHandOffScenarios.waitForSyncWaits(1, on: q, "the pool thread")
            s.async { other.post() }
            other.take()  // the pool runs s while its thread waits in q.sync
            q.async { log.body(2) }
        }
        r.sync {}
        q.sync {}
        Simulation.check(log.entries == [1, 2] && log.mostInBody == 1, "ran \(log.entries) (expected [1, 2]), \(log.mostInBody) at once")
        pool.shutdown()
    }

    /// `shutdown` from the passing body itself ("made from this queue's own work … the worker
    /// then exits after the current work"): B's turn and C's are queued; the body shuts the
    /// queue down (`.drain`) and returns. Expected: B, C, then the handler; counts exact.
    static func shutdownFromThePassingBody(pooled: Bool) -> @Sendable () -> Void {
        {
            let pool = pooled ? WorkerPool(threads: 2, label: "a46-own-pool") : nil
            let queue = Self.makeQueue("a46-own", pool: pool)
            let callers = (0..<2).map { SerialQueue(label: "a46-own-\($0)") }
            let log = ScenarioLog()
            let subscription = queue.whenShutDown { _ in log.entries.append(-1) }
            queue.sync {
                callers[0].async { queue.sync { log.body(1) } }
                SyncHandOffScenarios.waitForSyncWaits(1, on: queue, "caller B")
                callers[1].async { queue.sync { log.body(2) } }
                SyncHandOffScenarios.waitForSyncWaits(2, on: queue, "caller C")
                queue.shutdown(.drain)
            }
            for caller in callers { caller.sync {} }
            queue.shutdown()  // waits for the drain
            Simulation.check(log.entries == [1, 2, -1] && log.mostInBody == 1, "ran \(log.entries) (expected [1, 2, -1], pooled: \(pooled))")
            let figures = queue.statistics
            Simulation.check(figures.executed == figures.submitted, "\(figures)")
            _ = subscription
            pool?.shutdown()
        }
    }

    /// The stall watchdog under a chain of passes: "reports, once per stall, … any queue whose
    /// oldest waiting item has not started within `waitingThreshold`", a duration being a lower
    /// bound. Two threads call `sync` with 1.5 ms bodies (passing the queue to each other), a
    /// third posts `async` items. Checked with attack 44's `Waits`: every waiting report is
    /// covered by a real wait at least that long, each wait reported at most once.
    static func waitingReportsUnderPassesAreLowerBounds(pooled: Bool) -> @Sendable () -> Void {
        {
            let waits = Attack44Scenarios.Waits()
            let watchdog = Attack44Scenarios.watchdog(waits, label: "a46-wait")
            let pool = pooled ? WorkerPool(threads: 2, label: "a46-wait-pool") : nil
            let q = Self.makeQueue("a46-wait", pool: pool)
            let threads = (0..<3).map { SerialQueue(label: "a46-wait-\($0)") }
            watchdog.watch(q)
            for (index, thread) in threads.enumerated() {
                thread.async {
                    for call in 0..<3 {
                        let item = index * 100 + call
                        waits.begin(item)
                        if index == 2 {
                            q.async { waits.end(item) }
                            PromiseScenarios.pause(.microseconds(900))
                        } else {
                            q.sync {
                                waits.end(item)
                                PromiseScenarios.pause(.microseconds(1_500))
                            }
                        }
                    }
                }
            }
            for thread in threads { thread.sync {} }
            q.sync {}
            PromiseScenarios.pause(.microseconds(600))
            watchdog.stop()
            waits.checkReports("a46-wait-\(pooled)")
            if waits.reports.contains(where: { $0.kind == .waiting }) { Self.schedulesWithAWaitingReport.add(1, ordering: .relaxed) }
            let figures = q.statistics
            Simulation.check(figures.executed == figures.submitted, "\(figures)")
            pool?.shutdown()
        }
    }

    /// Schedules of `waitingReportsUnderPassesAreLowerBounds` that saw a waiting report (so its
    /// checks were not vacuous).
    static let schedulesWithAWaitingReport = Atomic<Int>(0)

    final class ReportLog: @unchecked Sendable {  // simulated threads only, one at a time
        var all: [StallWatchdog.Stall] = []
    }

    final class Box<Value>: @unchecked Sendable {  // simulated threads only, one at a time
        var value: Value
        init(_ value: Value) { self.value = value }
    }
}

@Suite struct Attack46ScenarioTests {
    /// Seeds per test: 10 (a regression run of about a second each), or `ATTACK46_SEEDS`.
    static var seedCount: UInt64 { UInt64(getenv("ATTACK46_SEEDS").flatMap { Int(String(cString: $0)) } ?? 10) }
    static var reproduce: Bool { getenv("ATTACK46_REPRODUCE").map { String(cString: $0) == "1" } ?? false }

    static func explore(_ name: String, _ scenario: @escaping @Sendable () -> Void) async -> SimulationReport {
        let report = await offThePool { Simulation(strategy: .random).explore(name, seeds: 0..<Self.seedCount, scenario) }
        print("\(name): \(report.failures.count) of \(report.results.count) schedules failed")
        for failure in report.failures.prefix(2) { print("  \(failure.failure!.description)") }
        return report
    }

    static func expectNoFailures(_ report: SimulationReport) {
        #expect(report.failures.isEmpty, "\(report.failures.count) failed; first: \(report.failures.first.map { $0.failure!.description } ?? "")")
    }

    @Test(arguments: [false, true])
    func aPassMakesRoomForAWaitingProducer(pooled: Bool) async {
        Self.expectNoFailures(await Self.explore("a46-room-\(pooled)", Attack46Scenarios.aPassMakesRoomForAWaitingProducer(pooled: pooled)))
    }

    @Test(arguments: [false, true])
    func passesAmongAsyncAndDelayedWorkKeepTheOrder(pooled: Bool) async {
        Self.expectNoFailures(await Self.explore("a46-mix-\(pooled)", Attack46Scenarios.passesAmongAsyncAndDelayedWork(pooled: pooled)))
    }

    @Test(arguments: [false, true])
    func suspendFromAnotherThreadRacesThePass(pooled: Bool) async {
        Self.expectNoFailures(await Self.explore("a46-sus-\(pooled)", Attack46Scenarios.suspendFromAnotherThreadRacesThePass(pooled: pooled)))
    }

    @Test(arguments: [false, true], [ShutdownMode.drain, .cancelPending])
    func shutdownRacingAChainOfPasses(pooled: Bool, mode: ShutdownMode) async {
        Self.expectNoFailures(
            await Self.explore("a46-shut-\(pooled)-\(mode)", Attack46Scenarios.shutdownRacingAChainOfPasses(pooled: pooled, mode: mode)))
    }

    @Test func aPoolThreadIsPassedTheQueueOnAOneThreadPool() async {
        Self.expectNoFailures(await Self.explore("a46-one", Attack46Scenarios.aPoolThreadIsPassedTheQueueOnAOneThreadPool))
    }

    @Test(arguments: [false, true])
    func shutdownFromThePassingBody(pooled: Bool) async {
        Self.expectNoFailures(await Self.explore("a46-own-\(pooled)", Attack46Scenarios.shutdownFromThePassingBody(pooled: pooled)))
    }

    @Test(arguments: [false, true])
    func waitingReportsUnderPassesAreLowerBounds(pooled: Bool) async {
        let before = Attack46Scenarios.schedulesWithAWaitingReport.load(ordering: .relaxed)
        Self.expectNoFailures(await Self.explore("a46-wait-\(pooled)", Attack46Scenarios.waitingReportsUnderPassesAreLowerBounds(pooled: pooled)))
        print("a46-wait-\(pooled): \(Attack46Scenarios.schedulesWithAWaitingReport.load(ordering: .relaxed) - before) schedules with a waiting report")
    }

    @Test(arguments: [false, true])
    func aHungBodyAfterAPassIsReportedRunningOnItsThread(pooled: Bool) async {
        Self.expectNoFailures(
            await Self.explore("a46-dog-\(pooled)", Attack46Scenarios.aHungBodyAfterAPassIsReportedRunningOnItsThread(pooled: pooled)))
    }
}
#endif
