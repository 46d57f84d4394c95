import SerialCore
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

/// `WorkerPool` as a `TaskExecutor`: tasks that prefer it run on its threads, with its work
/// conservation.
@Suite("WorkerPool as a TaskExecutor")
struct WorkerPoolTaskExecutorTests {
    static func onPoolThread(_ label: String) -> Bool {
        CurrentThread.name(ofSystemID: CurrentThread.systemID).hasPrefix(label)
    }

    @Test func childTasksOfATaskThatPrefersThePoolRunOnItsThreads() async {
        let pool = WorkerPool(threads: 2, label: "te-children")
        let onPool = await withTaskExecutorPreference(pool) {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<50 { group.addTask { Self.onPoolThread("te-children") } }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
        }
        #expect(onPool.count == 50 && onPool.allSatisfy { $0 }, "\(onPool.count { !$0 }) child tasks ran elsewhere")
        pool.shutdown()
    }

    @Test func anUnstructuredTaskPreferringThePoolRunsOnIt() async {
        let pool = WorkerPool(threads: 1, label: "te-task")
        let onPool = await Task(executorPreference: pool) { Self.onPoolThread("te-task") }.value
        #expect(onPool)
        pool.shutdown()
    }

    /// A job blocks one of two threads (a wait the pool cannot see); the next job must run on the
    /// other thread at once, not wait for the first.
    @Test func aJobNeverWaitsWhileAPoolThreadIdles() async {
        let pool = WorkerPool(threads: 2, label: "te-conserve")
        let release = TestSemaphore()
        let blockerStarted = TestSemaphore()
        let ran = TestSemaphore()
        let blocker = Task(executorPreference: pool) {
            blockerStarted.signal()
            _ = release.wait(timeout: .seconds(10))
        }
        #expect(await offThePool { blockerStarted.wait(timeout: .seconds(10)) }, "the first job never started")
        Task(executorPreference: pool) { ran.signal() }
        let ranMeanwhile = await offThePool { ran.wait(timeout: .seconds(2)) }
        #expect(ranMeanwhile, "a job waited 2 s while the pool's other thread was idle")
        release.signal()
        await blocker.value
        pool.shutdown()
    }

    @Test func anActorOnAPooledQueueKeepsItsIsolationInsideATaskThatPrefersThePool() async {
        let pool = WorkerPool(threads: 2, label: "te-actor")
        let queue = SerialQueue(label: "te-actor-queue", pool: pool)
        actor Counter {
            let queue: SerialQueue
            var count = 0
            init(queue: SerialQueue) { self.queue = queue }
            nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }
            func increment() -> Bool {
                self.queue.checkIsolated()
                self.count += 1
                return self.queue.isCurrent
            }
        }
        let counter = Counter(queue: queue)
        let allOnQueue = await withTaskExecutorPreference(pool) {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 { group.addTask { await counter.increment() } }
                return await group.reduce(true) { $0 && $1 }
            }
        }
        #expect(allOnQueue)
        #expect(await counter.count == 100)
        queue.shutdown()
        pool.shutdown()
    }

    /// A pool stopping while task jobs still wait in its run queue must wake its idle threads
    /// once the last job is taken: a thread that went idle before the stop waits for a wake-up
    /// that used to come only from a queue detaching, so `shutdown()` waited forever (seen in 1
    /// of 20 runs of a test that shut a WheelTaskExecutor down right after its wheel fired a job).
    /// The race is narrow: many rounds, each bounded.
    @Test func shutdownWithTaskJobsStillQueuedReturns() async {
        for round in 0..<300 {
            let pool = WorkerPool(threads: 2, label: "te-stop")
            for _ in 0..<3 { Task(executorPreference: pool) {} }
            // A hang kills the run with this message; a slow cooperative pool only slows it.
            await offThePool {
                withWatchdog(timeout: .seconds(30), "round \(round): shutdown() with task jobs queued did not return") {
                    pool.shutdown()
                }
            }
        }
    }
}
