import SerialCore
import SerialTestSupport
import Testing

/// An actor whose executor is a SerialQueue.
private actor Account {
    let queue: SerialQueue
    private(set) var balance = 0

    init(queue: SerialQueue) {
        self.queue = queue
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }

    func deposit(_ amount: Int) -> Bool {
        self.balance += amount
        return self.queue.isCurrent
    }
}

private struct Boom: Error, Equatable {}

@Suite("SerialQueue as an executor")
struct SerialQueueExecutorTests {
    @Test(arguments: QueueMode.allCases) func actorMethodsRunOnTheQueuesWorker(mode: QueueMode) async {
        let queue = mode.queue(label: "actor-queue")
        let account = Account(queue: queue)
        var allOnQueue = true
        for _ in 0..<100 { allOnQueue = await account.deposit(1) && allOnQueue }
        #expect(allOnQueue)
        #expect(await account.balance == 100)
    }

    @Test(arguments: QueueMode.allCases) func actorJobsAndAsyncWorkShareOneOrder(mode: QueueMode) async {
        let queue = mode.queue(label: "actor-order")
        let account = Account(queue: queue)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { _ = await account.deposit(2) } }
        }
        // async work submitted after the jobs completed sees all of them.
        let balance = await queue.run { account.assumeIsolated { $0.balance } }
        #expect(balance == 100)
    }

    @Test(arguments: QueueMode.allCases) func checkIsolatedPassesInsideSyncBodies(mode: QueueMode) {
        let queue = mode.queue(label: "isolated-sync")
        let account = Account(queue: queue)
        // assumeIsolated asks the executor (checkIsolated / isIsolatingCurrentContext): inside a
        // sync body the caller's thread holds the queue, so the actor's state is safely reachable.
        let balance = queue.sync { account.assumeIsolated { $0.balance } }
        #expect(balance == 0)
        queue.sync { queue.checkIsolated() }
        queue.sync { queue.preconditionIsCurrent() }
    }

    @Test(arguments: QueueMode.allCases) func isIsolatingCurrentContextAnswersForTheCaller(mode: QueueMode) {
        let queue = mode.queue(label: "isolating")
        #expect(queue.isIsolatingCurrentContext() == false)
        #expect(queue.sync { queue.isIsolatingCurrentContext() } == true)
    }

    @Test(arguments: QueueMode.allCases) func taskExecutorPreferenceRunsTheTaskOnTheWorker(mode: QueueMode) async {
        let queue = mode.queue(label: "task-executor")
        let onQueue = await Task(executorPreference: queue) { queue.isCurrent }.value
        #expect(onQueue)
        let nested = await withTaskExecutorPreference(queue) { queue.isCurrent }
        #expect(nested)
    }

    @Test(arguments: QueueMode.allCases) func aTaskPreferringTheQueueReleasesItWhenDone(mode: QueueMode) async {
        weak var weakQueue: SerialQueue?
        do {
            let queue = mode.queue(label: "task-executor-release")
            weakQueue = queue
            #expect(await Task(executorPreference: queue) { queue.isCurrent }.value)
        }
        // The task retained the queue as its preferred executor; once the task is gone the
        // queue must be too (a mismatched executor identity would leak it).
        var released = weakQueue == nil
        for _ in 0..<1_000 where !released {
            await Task.yield()
            released = weakQueue == nil
        }
        #expect(released, "a task's executor preference kept the queue alive")
    }

    @Test(arguments: QueueMode.allCases) func runReturnsTheBodysValueFromTheWorker(mode: QueueMode) async {
        let queue = mode.queue(label: "run-value")
        let (value, onQueue) = await queue.run { (21 * 2, queue.isCurrent) }
        #expect(value == 42)
        #expect(onQueue)
    }

    @Test(arguments: QueueMode.allCases) func runRethrowsTheBodysError(mode: QueueMode) async {
        let queue = mode.queue(label: "run-throws")
        await #expect(throws: Boom()) {
            try await queue.run { () throws(Boom) -> Int in throw Boom() }
        }
    }

    /// `run` on a full bounded queue is admitted over the bound (as executor jobs are) instead of
    /// waiting for room on the caller's cooperative thread: as many waiting calls as there are
    /// cooperative threads would otherwise stop every other task until the queue drains.
    ///
    /// Checked by what the queue counts, not by how soon another task runs: every call must be
    /// submitted while the queue is still held and full, which a call waiting for room never is.
    /// The calling tasks run on a pool of their own, as wide as the cooperative pool, so that they
    /// start however long other suites hold the cooperative threads (a call waiting for room would
    /// block a thread of that pool just the same).
    @Test(arguments: QueueMode.allCases) func runOnAFullBoundedQueueNeverBlocksACooperativeThread(mode: QueueMode) async {
        let queue = mode.queue(label: "run-bounded", maximumQueued: 1)
        let gate = TestSemaphore()
        queue.async { _ = gate.wait(timeout: .seconds(600)) }  // holds the queue (longer than any wait below)
        queue.async {}  // fills the FIFO: the next bounded submission would wait for room
        let callers = WorkerPool.defaultThreadCount  // Swift concurrency's cooperative width
        let callerPool = WorkerPool(threads: callers, label: "run-callers")
        let finished = TestCounter()
        for _ in 0..<callers {
            Task.detached(executorPreference: callerPool) {
                await queue.run {}
                finished.increment()
            }
        }
        // However slowly the tasks start, each call is admitted while the gate still holds the queue.
        let admitted = await eventually(timeout: .seconds(120)) { queue.statistics.submitted == 2 + callers }
        let submitted = queue.statistics.submitted
        gate.signal()  // the queue drains: blocked calls (if any) get room
        #expect(admitted, "\(submitted - 2) of \(callers) `run` calls entered a full bounded queue: the rest waited for room")
        #expect(await eventually { finished.value == callers }, "a `run` call never returned")
        callerPool.shutdown()
    }
}
