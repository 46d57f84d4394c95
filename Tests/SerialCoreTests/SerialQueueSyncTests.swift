import SerialCore
import SerialTestSupport
import Testing

private struct Failure: Error, Equatable {}

/// A non-Sendable class: `sync` bodies may capture and mutate it.
private final class Counter {
    var value = 0
}

@Suite("SerialQueue sync")
struct SerialQueueSyncTests {
    @Test(arguments: QueueMode.allCases) func syncReturnsTheBodysValue(mode: QueueMode) {
        let queue = mode.queue(label: "sync-value")
        #expect(queue.sync { 6 * 7 } == 42)
    }

    @Test(arguments: QueueMode.allCases) func syncRethrowsTheBodysError(mode: QueueMode) {
        let queue = mode.queue(label: "sync-throws")
        #expect(throws: Failure()) { try queue.sync { throw Failure() } }
        // The queue is usable after a throwing body gave it back.
        #expect(queue.sync { 1 } == 1)
    }

    @Test(arguments: QueueMode.allCases) func syncBodiesMayMutateNonSendableState(mode: QueueMode) {
        let queue = mode.queue(label: "sync-capture")
        let counter = Counter()
        for _ in 0..<10 { queue.sync { counter.value += 1 } }
        #expect(counter.value == 10)
    }

    @Test(arguments: QueueMode.allCases) func isCurrentIsTrueInsideSyncBodiesAndAsyncWorkOnly(mode: QueueMode) {
        let queue = mode.queue(label: "sync-current")
        let other = mode.queue(label: "sync-other")
        #expect(!queue.isCurrent)
        #expect(queue.sync { queue.isCurrent && !other.isCurrent })
        #expect(queue.sync { other.sync { queue.isCurrent && other.isCurrent } })
        let seen = LockedValue<Bool?>(nil)
        let done = TestSemaphore()
        queue.async {
            seen.withLock { $0 = queue.isCurrent }
            done.signal()
        }
        #expect(done.wait(), "async work did not run")
        #expect(seen.withLock { $0 } == true)
        #expect(!queue.isCurrent)
    }

    @Test(arguments: QueueMode.allCases) func syncOnABusyQueueWaitsForEarlierWorkAndRunsOnTheCaller(mode: QueueMode) {
        let queue = mode.queue(label: "sync-busy")
        let gate = TestSemaphore()
        let started = TestSemaphore()
        let log = LockedValue<[String]>([])
        queue.async {
            started.signal()
            _ = gate.wait()
            log.withLock { $0.append("first") }
        }
        #expect(started.wait(), "first async work did not start")
        queue.async { log.withLock { $0.append("second") } }
        let caller = CurrentThreadID.value
        // Let the worker go only once this thread is (very likely) waiting its turn; order must
        // hold either way.
        let releaser = mode.queue(label: "releaser")
        releaser.async { gate.signal() }
        let thread = queue.sync {
            log.withLock { $0.append("sync") }
            return CurrentThreadID.value
        }
        queue.async { log.withLock { $0.append("after") } }
        queue.sync {}
        #expect(thread == caller)
        #expect(log.withLock { $0 } == ["first", "second", "sync", "after"])
    }

    @Test(arguments: QueueMode.allCases) func asyncSubmittedInsideASyncBodyRunsWithNoFurtherSubmission(mode: QueueMode) {
        let queue = mode.queue(label: "sync-wakeup")
        let ran = TestSemaphore()
        queue.async { ran.signal() }
        #expect(ran.wait(), "the worker never started")
        // The worker sleeps; the sync body takes the idle queue, and the async work it submits
        // cannot wake the worker (the queue is owned). Leaving the body must wake it.
        for round in 0..<100 {
            queue.sync { queue.async { ran.signal() } }
            #expect(ran.wait(timeout: .seconds(5)), "round \(round): wake-up lost after a sync body")
        }
    }

    @Test(arguments: QueueMode.allCases) func nestedSyncAcrossDifferentQueuesWorks(mode: QueueMode) {
        let a = mode.queue(label: "nest-a")
        let b = mode.queue(label: "nest-b")
        let c = mode.queue(label: "nest-c")
        #expect(a.sync { b.sync { c.sync { 3 } } } == 3)
    }

    @Test(arguments: QueueMode.allCases) func syncFromAnotherQueuesWorkWaitsItsTurn(mode: QueueMode) {
        let a = mode.queue(label: "cross-a")
        let b = mode.queue(label: "cross-b")
        let log = LockedValue<[Int]>([])
        let done = TestSemaphore()
        b.async { log.withLock { $0.append(1) } }
        a.async {
            b.sync { log.withLock { $0.append(2) } }
            done.signal()
        }
        #expect(done.wait(), "sync from another queue's worker never returned")
        b.sync { log.withLock { $0.append(3) } }
        #expect(log.withLock { $0 } == [1, 2, 3])
    }

    @Test(arguments: QueueMode.allCases) func syncWaitsWhileSuspendedAndRunsAfterResume(mode: QueueMode) {
        let queue = mode.queue(label: "sync-suspended")
        queue.suspend()
        let entered = TestFlag()
        let returned = TestSemaphore()
        let caller = mode.queue(label: "sync-caller")
        caller.async {
            queue.sync { entered.set() }
            returned.signal()
        }
        #expect(!returned.wait(timeout: .milliseconds(100)), "sync ran on a suspended queue")
        #expect(!entered.isSet)
        queue.resume()
        #expect(returned.wait(), "sync never ran after resume")
        #expect(entered.isSet)
    }
}
