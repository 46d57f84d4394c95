import Glibc
import SerialCore
import SerialTestSupport
import Synchronization
import Testing

/// What a queue does when things go wrong: shutdown seen by the work built on it, a full
/// bounded queue, memory after a burst, thread names.
@Suite("SerialQueue failure paths")
struct SerialQueueFailurePathTests {
    @Test(arguments: QueueMode.allCases) func shutdownHandlersRunOnceOnTheWorkerAfterTheDrainedWork(mode: QueueMode) throws {
        let queue = mode.queue(label: "observed")
        let log = LockedLog()
        let gate = TestSemaphore()
        queue.async { _ = gate.wait() }
        queue.async { log.append("work") }
        let subscription = queue.whenShutDown { reason in
            log.append("handler \(reason.scheduler) current=\(queue.isCurrent)")
            // Inside the handler the queue already refuses work.
            do { try queue.execute {} } catch { log.append("refused: \(error)") }
        }
        gate.signal()
        queue.shutdown()
        #expect(log.entries == [
            "work", "handler observed current=true", "refused: scheduler \"observed\" is shut down; the work was not run",
        ])
        subscription.cancel()  // after it ran: nothing happens
        #expect(log.entries.count == 3)
    }

    @Test(arguments: QueueMode.allCases) func aHandlerRegisteredAfterShutdownRunsAtOnceOnTheCaller(mode: QueueMode) {
        let queue = mode.queue(label: "late")
        queue.shutdown()
        let ranOn = Atomic<UInt>(0)
        _ = queue.whenShutDown { _ in ranOn.store(CurrentThreadID.value, ordering: .relaxed) }
        #expect(ranOn.load(ordering: .relaxed) == CurrentThreadID.value)
    }

    @Test(arguments: QueueMode.allCases) func aWithdrawnHandlerNeverRuns(mode: QueueMode) {
        let queue = mode.queue(label: "withdrawn")
        let ran = Atomic<Int>(0)
        let subscription = queue.whenShutDown { _ in ran.add(1, ordering: .relaxed) }
        subscription.cancel()
        queue.shutdown()
        #expect(ran.load(ordering: .relaxed) == 0)
    }

    @Test(arguments: QueueMode.allCases) func executeAndScheduleThrowAfterShutdownAndReleaseTheWork(mode: QueueMode) {
        let queue = mode.queue(label: "refusing")
        queue.shutdown()
        var token: Token? = Token()
        weak let watched = token
        #expect(throws: SchedulingError.shutDown(scheduler: "refusing")) {
            try queue.execute { [token] in _ = token }
        }
        #expect(throws: SchedulingError.shutDown(scheduler: "refusing")) {
            try queue.schedule(after: .seconds(1)) { [token] in _ = token }
        }
        token = nil
        #expect(watched == nil, "refused work must be released, not kept")
    }

    @Test(arguments: QueueMode.allCases) func releasingTheQueueRunsItsShutdownHandlers(mode: QueueMode) {
        let ran = TestSemaphore()
        do {
            let queue = mode.queue(label: "released")
            _ = queue.whenShutDown { _ in ran.signal() }
        }
        #expect(ran.wait(timeout: .seconds(10)), "a released queue never told its shutdown handlers")
    }

    @Test(arguments: QueueMode.allCases) func tryAsyncOnAFullQueueThrowsFullAndKeepsTheQueuedWork(mode: QueueMode) throws {
        let queue = mode.queue(label: "bounded", maximumQueued: 3)
        let ran = Atomic<Int>(0)
        queue.suspend()
        for _ in 0..<3 { try queue.tryAsync { ran.add(1, ordering: .relaxed) } }
        #expect(throws: SerialQueueError.full(label: "bounded", limit: 3)) {
            try queue.tryAsync { ran.add(1, ordering: .relaxed) }
        }
        queue.resume()
        queue.sync {}
        #expect(ran.load(ordering: .relaxed) == 3)
        try queue.tryAsync { ran.add(1, ordering: .relaxed) }  // room again
        queue.sync {}
        #expect(ran.load(ordering: .relaxed) == 4)
    }

    @Test(arguments: QueueMode.allCases) func asyncOnAFullQueueWaitsForRoomAndKeepsItsOrder(mode: QueueMode) throws {
        let queue = mode.queue(label: "backpressure", maximumQueued: 2)
        let log = LockedLog()
        queue.suspend()
        queue.async { log.append("1") }
        queue.async { log.append("2") }
        let producerDone = TestSemaphore()
        runThreads(2) { index in
            if index == 0 {
                queue.async { log.append("3") }  // full: waits for room
                producerDone.signal()
            } else {
                // The producer must be parked on the full queue, not done.
                let parked = eventually { queue._roomWaiters == 1 }
                #expect(parked, "the producer never waited for room")
                #expect(!producerDone.wait(timeout: .zero), "async returned while the queue was full")
                queue.resume()
                #expect(producerDone.wait(), "the producer never got room")
            }
        }
        queue.sync {}
        #expect(log.entries == ["1", "2", "3"])
    }

    @Test(arguments: QueueMode.allCases) func asyncFromTheQueuesOwnWorkIsAdmittedOverTheBound(mode: QueueMode) {
        let queue = mode.queue(label: "own-work", maximumQueued: 1)
        let ran = Atomic<Int>(0)
        queue.sync {
            // Waiting for room here would wait for this very body to end.
            for _ in 0..<5 { queue.async { ran.add(1, ordering: .relaxed) } }
        }
        queue.sync {}
        #expect(ran.load(ordering: .relaxed) == 5)
    }

    @Test(arguments: QueueMode.allCases) func memoryComesBackAfterABurst(mode: QueueMode) {
        // Under a watchdog: the release at the end once hung, when the worker slept without
        // looking again after giving memory back with the lock released (a lost wake-up).
        withWatchdog(timeout: .seconds(30), "a queue released after a burst never let its worker exit") {
            let queue = mode.queue(label: "burst")
            queue.suspend()
            for _ in 0..<100_000 { queue.async {} }
            let grown = queue._fifoCapacity
            #expect(grown >= 100_000)
            queue.resume()
            queue.sync {}
            // The worker shrinks its rings as it goes to sleep, just after the sync returned.
            let shrunk = eventually { queue._fifoCapacity <= 1024 }
            #expect(shrunk, "the FIFO kept \(queue._fifoCapacity) slots after a burst of 100,000")
        }
    }

    @Test func anEmptyLabelStillNamesTheWorkerThread() {
        let queue = SerialQueue(label: "")
        let seen = LockedLog()
        let done = TestSemaphore()
        queue.async {
            seen.append(currentThreadName())
            done.signal()
        }
        #expect(done.wait())
        #expect(seen.entries == ["SerialQueue"])
    }
}

/// A `@Sendable` log of strings.
final class LockedLog: Sendable {
    private let storage = LockedValue<[String]>([])
    func append(_ entry: String) { self.storage.withLock { $0.append(entry) } }
    var entries: [String] { self.storage.withLock { $0 } }
}

/// Something closures capture, to see when they are released.
final class Token: Sendable {}

/// The calling thread's name, as the kernel keeps it.
func currentThreadName() -> String {
    let descriptor = open("/proc/thread-self/comm", O_RDONLY)
    guard descriptor >= 0 else { return "?" }
    defer { close(descriptor) }
    var bytes = [UInt8](repeating: 0, count: 32)
    let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    return String(decoding: bytes[..<max(0, count)], as: UTF8.self).filter { $0 != "\n" }
}
