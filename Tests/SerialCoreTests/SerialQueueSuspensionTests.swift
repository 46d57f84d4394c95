import SerialCore
import SerialTestSupport
import Testing

@Suite("SerialQueue suspension")
struct SerialQueueSuspensionTests {
    @Test(arguments: QueueMode.allCases) func suspendedQueueRunsNothingUntilResumed(mode: QueueMode) {
        let queue = mode.queue(label: "suspended")
        queue.suspend()
        #expect(queue.isSuspended)
        let ran = TestSemaphore()
        queue.async { ran.signal() }
        #expect(!ran.wait(timeout: .milliseconds(100)), "work ran on a suspended queue")
        queue.resume()
        #expect(!queue.isSuspended)
        #expect(ran.wait(), "work never ran after resume")
    }

    @Test(arguments: QueueMode.allCases) func suspensionsNestAndNeedAMatchingResumeEach(mode: QueueMode) {
        let queue = mode.queue(label: "nested-suspend")
        queue.suspend()
        queue.suspend()
        let ran = TestSemaphore()
        queue.async { ran.signal() }
        queue.resume()
        #expect(queue.isSuspended)
        #expect(!ran.wait(timeout: .milliseconds(50)), "work ran with one suspension still held")
        queue.resume()
        #expect(ran.wait(), "work never ran after the last resume")
    }

    @Test(arguments: QueueMode.allCases) func suspendFromInsideWorkStopsTheRestOfTheBatch(mode: QueueMode) {
        let queue = mode.queue(label: "suspend-inside")
        let gate = TestSemaphore()
        let suspended = TestSemaphore()
        let next = TestSemaphore()
        let log = LockedValue<[Int]>([])
        // All three are enqueued before the worker wakes, so they arrive in one batch.
        queue.async { _ = gate.wait() }
        queue.async {
            queue.suspend()
            log.withLock { $0.append(1) }
            suspended.signal()
        }
        queue.async {
            log.withLock { $0.append(2) }
            next.signal()
        }
        gate.signal()
        #expect(suspended.wait(), "the suspending work never ran")
        #expect(!next.wait(timeout: .milliseconds(100)), "work after suspend() ran in the same batch")
        queue.resume()
        #expect(next.wait(), "work never ran after resume")
        #expect(log.withLock { $0 } == [1, 2])
    }

    @Test(arguments: QueueMode.allCases) func delayedWorkFallingDueWhileSuspendedRunsAfterResume(mode: QueueMode) {
        let queue = mode.queue(label: "suspend-delayed")
        queue.suspend()
        let ran = TestSemaphore()
        queue.asyncAfter(delay: .milliseconds(5)) { ran.signal() }
        #expect(!ran.wait(timeout: .milliseconds(50)), "delayed work ran on a suspended queue")
        queue.resume()
        #expect(ran.wait(), "delayed work never ran after resume")
    }

    @Test(arguments: QueueMode.allCases) func shutdownEndsASuspensionAndDrains(mode: QueueMode) {
        let queue = mode.queue(label: "suspend-shutdown")
        let ran = TestCounter()
        queue.suspend()
        for _ in 0..<10 { queue.async { ran.increment() } }
        queue.shutdown(.drain)
        #expect(ran.value == 10)
        #expect(!queue.isSuspended)
    }
}
