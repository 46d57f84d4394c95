import SerialCore
import SerialTestSupport
import Testing

@Suite("SerialQueue ordering")
struct SerialQueueOrderingTests {
    @Test(arguments: QueueMode.allCases) func asyncWorkRunsInSubmissionOrderOnTheWorker(mode: QueueMode) {
        let queue = mode.queue(label: "order")
        let log = LockedValue<[Int]>([])
        let done = TestSemaphore()
        for value in 0..<1_000 {
            queue.async { log.withLock { $0.append(value) } }
        }
        queue.async { done.signal() }
        #expect(done.wait(), "the queue did not drain 1,000 async works within 30 s")
        #expect(log.withLock { $0 } == Array(0..<1_000))
    }

    @Test(arguments: QueueMode.allCases) func syncRunsOnCallersThreadAfterEarlierAsyncWork(mode: QueueMode) {
        let queue = mode.queue(label: "sync-after")
        let log = LockedValue<[String]>([])
        let gate = TestSemaphore()
        queue.async {
            _ = gate.wait()
            log.withLock { $0.append("async") }
        }
        let caller = CurrentThreadID.value
        gate.signal()
        let ranOn = queue.sync {
            log.withLock { $0.append("sync") }
            return CurrentThreadID.value
        }
        #expect(ranOn == caller)
        #expect(log.withLock { $0 } == ["async", "sync"])
    }

    @Test(arguments: QueueMode.allCases) func asyncSubmittedAfterSyncRunsAfterIt(mode: QueueMode) {
        let queue = mode.queue(label: "after-sync")
        let log = LockedValue<[String]>([])
        let done = TestSemaphore()
        queue.sync {
            queue.async { log.withLock { $0.append("async") }; done.signal() }
            log.withLock { $0.append("sync") }
        }
        #expect(done.wait(), "async work submitted inside sync never ran")
        #expect(log.withLock { $0 } == ["sync", "async"])
    }
}
