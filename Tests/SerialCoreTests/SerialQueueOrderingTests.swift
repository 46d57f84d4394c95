import SerialCore
import SerialTestSupport
import SerialTesting
import Testing

@Suite("SerialQueue ordering")
struct SerialQueueOrderingTests {
    @Test(arguments: QueueMode.allCases) func asyncWorkRunsInSubmissionOrderOnTheWorker(mode: QueueMode) throws {
        let queue = mode.queue(label: "order")
        let log = CallbackRecorder<Int>("async work")
        for value in 0..<1_000 {
            queue.async { log.record(value) }
        }
        #expect(try log.wait(forCount: 1_000, timeout: .seconds(30)) == Array(0..<1_000))
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
