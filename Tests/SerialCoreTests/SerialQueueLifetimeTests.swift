import SerialCore
import SerialTestSupport
import Testing

/// Threads are recognised by their names (unique labels), since other suites run in parallel
/// and create threads of their own.
@Suite("SerialQueue lifetime")
struct SerialQueueLifetimeTests {
    @Test(arguments: QueueMode.allCases) func releasingTheLastReferenceRunsEnqueuedWorkThenEndsTheThread(mode: QueueMode) {
        let ran = TestCounter()
        var queue: SerialQueue? = mode.queue(label: "drop-drain")
        for _ in 0..<1_000 { queue!.async { ran.increment() } }
        queue = nil  // joins the worker: enqueued work has run when this returns
        _ = queue
        #expect(ran.value == 1_000)
        // pthread_join has returned; the kernel drops the task from /proc a moment later.
        #expect(eventually { !currentThreadNames().contains("drop-drain") }, "a released queue kept its thread")
    }

    @Test(arguments: QueueMode.allCases) func theWorkerDoesNotRetainTheQueue(mode: QueueMode) {
        weak var weakQueue: SerialQueue?
        do {
            let queue = mode.queue(label: "weak")
            weakQueue = queue
            queue.asyncAfter(delay: .seconds(3600)) {}
            queue.sync {}
        }
        #expect(weakQueue == nil)
    }

    @Test(arguments: QueueMode.allCases) func lastReleaseOnTheWorkerItselfDoesNotJoinItself(mode: QueueMode) {
        let released = TestSemaphore()
        let ranAfter = TestCounter()
        do {
            let queue = mode.queue(label: "self-release")
            let gate = TestSemaphore()
            // The only remaining references end up in closures the worker runs and releases.
            queue.async { [queue] in
                _ = gate.wait()
                queue.async { ranAfter.increment() }
                queue.async { released.signal() }
            }
            gate.signal()
        }
        #expect(released.wait(), "work enqueued before a release on the worker did not run")
        #expect(ranAfter.value == 1)
        #expect(eventually { !currentThreadNames().contains("self-release") }, "the detached worker never exited")
    }

    @Test func theWorkerThreadIsNamedFromTheLabel() {
        let queue = SerialQueue(label: "named-worker-thread-long-label")
        let started = TestSemaphore()
        queue.async { started.signal() }
        #expect(started.wait(), "the worker never ran")
        let names = currentThreadNames()
        #expect(names.contains("named-worker-th"), "thread names: \(names)")
        _ = queue
    }

    @Test(arguments: [
        ("a", "a"), ("exactly15bytes!", "exactly15bytes!"), ("sixteen-bytes-xx", "sixteen-bytes-x"),
        // "é" is two bytes in UTF-8: the name stops before a character that would not fit whole.
        ("ééééééé-x", "ééééééé-"), ("éééééééé", "ééééééé"),
    ])
    func threadNamesKeepFifteenBytesOnCharacterBoundaries(label: String, expected: String) {
        let queue = SerialQueue(label: label)
        let started = TestSemaphore()
        queue.async { started.signal() }  // the worker names itself before it runs any work
        #expect(started.wait(), "the worker never ran")
        let names = currentThreadNames()
        #expect(names.contains(expected), "thread names: \(names)")
        _ = queue
    }

    @Test(arguments: QueueMode.allCases) func shutdownDrainRunsPendingWorkAndEndsTheThread(mode: QueueMode) {
        let queue = mode.queue(label: "drain-shutdown")
        let ran = TestCounter()
        let gate = TestSemaphore()
        queue.async { _ = gate.wait() }
        for _ in 0..<100 { queue.async { ran.increment() } }
        let delayed = queue.asyncAfter(delay: .seconds(3600)) {}
        gate.signal()
        let report = queue.shutdown(.drain)
        #expect(ran.value == 100)
        #expect(report == ShutdownReport(cancelledWork: 0, cancelledDelayedWork: 1))
        #expect(delayed.isCancelled)
        #expect(queue.isShutDown)
        #expect(eventually { !currentThreadNames().contains("drain-shutdown") }, "the worker outlived shutdown")
    }

    @Test(arguments: QueueMode.allCases) func shutdownCancelPendingDropsQueuedWorkAndSaysHowMuch(mode: QueueMode) {
        let queue = mode.queue(label: "cancel")
        let ran = TestCounter()
        let started = TestSemaphore()
        let gate = TestSemaphore()
        queue.async {
            started.signal()
            _ = gate.wait()
        }
        #expect(started.wait(), "first work did not start")
        for _ in 0..<50 { queue.async { ran.increment() } }
        let releaser = mode.queue(label: "cancel-releaser")
        releaser.asyncAfter(delay: .milliseconds(20)) { gate.signal() }
        let report = queue.shutdown(.cancelPending)
        #expect(ran.value == 0)
        #expect(report.cancelledWork == 50)
    }

    @Test(arguments: QueueMode.allCases) func shutdownCancelPendingFromInsideWorkDropsTheRestOfTheBatch(mode: QueueMode) {
        let queue = mode.queue(label: "cancel-inside")
        let ran = TestCounter()
        let gate = TestSemaphore()
        queue.async { _ = gate.wait() }
        let innerReport = LockedValue<ShutdownReport?>(nil)
        let shutDownInside = TestSemaphore()
        queue.async {
            let report = queue.shutdown(.cancelPending)
            innerReport.withLock { $0 = report }
            shutDownInside.signal()
        }
        for _ in 0..<20 { queue.async { ran.increment() } }
        gate.signal()
        #expect(shutDownInside.wait(), "shutdown from inside work never returned")
        let report = queue.shutdown()  // a second call waits for the worker, then gives the totals
        #expect(report == ShutdownReport(cancelledWork: 20, cancelledDelayedWork: 0))
        // Called from inside, the call counts what it dropped from the FIFO; the rest of the
        // worker's batch (how much depends on timing) is dropped after it returns.
        #expect((innerReport.withLock { $0 }?.cancelledWork ?? -1) <= 20)
        #expect(ran.value == 0, "work after a cancelling shutdown ran")
    }

    @Test(arguments: QueueMode.allCases) func shutdownWaitsForASyncBodyThatTookTheIdleQueue(mode: QueueMode) {
        let queue = mode.queue(label: "door-shutdown")
        let started = TestSemaphore()
        queue.async { started.signal() }
        #expect(started.wait(), "the worker never ran")
        // The worker is (very likely) asleep, so the sync below takes the queue without the lock;
        // shutdown must still see that body as the owner and wait for it.
        let inBody = TestSemaphore()
        let release = TestSemaphore()
        let bodyDone = TestFlag()
        let caller = mode.queue(label: "door-caller")
        caller.async {
            queue.sync {
                inBody.signal()
                _ = release.wait()
                bodyDone.set()
            }
        }
        #expect(inBody.wait(), "the sync body never started")
        let shutdownReturned = TestSemaphore()
        let closer = mode.queue(label: "door-closer")
        closer.async {
            queue.shutdown()
            shutdownReturned.signal()
        }
        #expect(!shutdownReturned.wait(timeout: .milliseconds(100)), "shutdown returned while a sync body held the queue")
        release.signal()
        #expect(shutdownReturned.wait(), "shutdown never returned after the sync body")
        #expect(bodyDone.isSet)
    }

    @Test(arguments: QueueMode.allCases) func tryAsyncAfterShutdownThrowsInsteadOfDropping(mode: QueueMode) {
        let queue = mode.queue(label: "try-async")
        queue.shutdown()
        #expect(throws: SerialQueueError.shutDown(label: "try-async")) {
            try queue.tryAsync {}
        }
    }

    @Test(arguments: QueueMode.allCases) func shutdownFromTheQueuesOwnWorkDoesNotDeadlock(mode: QueueMode) {
        let queue = mode.queue(label: "self-shutdown")
        let done = TestSemaphore()
        queue.async {
            queue.shutdown()
            done.signal()
        }
        #expect(done.wait(), "shutdown from the queue's own work never returned")
        #expect(queue.isShutDown)
    }
}
