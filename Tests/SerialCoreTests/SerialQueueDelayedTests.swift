import SerialCore
import SerialTestSupport
import SerialTesting
import Testing

/// Real-time checks of `asyncAfter` with lenient bounds: never early; late only by scheduling noise.
/// (The services built on top test their time logic on virtual time.)
@Suite("SerialQueue delayed work")
struct SerialQueueDelayedTests {
    @Test(arguments: QueueMode.allCases) func delayedWorkNeverRunsBeforeItsDeadline(mode: QueueMode) throws {
        let queue = mode.queue(label: "delayed")
        let lateness = CallbackRecorder<Int64>("lateness in ns")
        for index in 0..<20 {
            let delay = Duration.milliseconds(index % 5 * 3 + 1)
            let deadline = MonotonicInstant.now().advanced(by: delay)
            queue.asyncAfter(deadline: deadline) {
                let now = MonotonicInstant.now()
                lateness.record(deadline.duration(to: now).saturatingNanoseconds)
            }
        }
        let all = try lateness.wait(forCount: 20, timeout: .seconds(30))
        #expect(all.allSatisfy { $0 >= 0 }, "ran early: \(all.filter { $0 < 0 }) ns")
    }

    @Test(arguments: QueueMode.allCases) func delayedWorkRunsInDeadlineOrder(mode: QueueMode) throws {
        let queue = mode.queue(label: "delayed-order")
        let log = CallbackRecorder<Int>("delayed work")
        let base = MonotonicInstant.now().advanced(by: .milliseconds(20))
        for index in [5, 1, 4, 2, 3, 0] {
            queue.asyncAfter(deadline: base.advanced(by: .milliseconds(index))) {
                log.record(index)
            }
        }
        #expect(try log.wait(forCount: 6, timeout: .seconds(30)) == [0, 1, 2, 3, 4, 5])
    }

    @Test(arguments: QueueMode.allCases) func cancelBeforeTheDeadlinePreventsTheRun(mode: QueueMode) {
        let queue = mode.queue(label: "delayed-cancel")
        let ran = TestFlag()
        let handle = queue.asyncAfter(delay: .milliseconds(20)) { ran.set() }
        #expect(handle.cancel())
        #expect(!handle.cancel(), "a second cancel must report it did not prevent anything")
        #expect(handle.status == .cancelled)
        let after = TestSemaphore()
        queue.asyncAfter(delay: .milliseconds(40)) { after.signal() }
        #expect(after.wait(), "later delayed work never ran")
        #expect(!ran.isSet)
    }

    @Test(arguments: QueueMode.allCases) func cancelReleasesTheClosureAtOnce(mode: QueueMode) {
        final class Captured: Sendable {}
        let queue = mode.queue(label: "delayed-release-closure")
        weak var weakCaptured: Captured?
        let handle: DelayedWork
        do {
            let captured = Captured()
            weakCaptured = captured
            handle = queue.asyncAfter(delay: .seconds(3600)) { _ = captured }
        }
        #expect(weakCaptured != nil, "the pending work must keep its captures")
        #expect(handle.cancel())
        // Not an hour later when the worker would meet the entry: now.
        #expect(weakCaptured == nil, "a cancelled far-future work kept its captures alive")
    }

    @Test(arguments: QueueMode.allCases) func cancelAfterTheRunReturnsFalse(mode: QueueMode) {
        let queue = mode.queue(label: "delayed-late-cancel")
        let done = TestSemaphore()
        let handle = queue.asyncAfter(delay: .zero) { done.signal() }
        #expect(done.wait(), "delayed work never ran")
        #expect(!handle.cancel())
        #expect(handle.status == .started)
    }

    @Test(arguments: QueueMode.allCases) func cancelledEntriesArePurgedFromTheHeap(mode: QueueMode) {
        let queue = mode.queue(label: "delayed-purge")
        for _ in 0..<10_000 {
            queue.asyncAfter(delay: .seconds(3600)) {}.cancel()
        }
        // Each insert past the threshold purges cancelled entries, so the heap stays small.
        #expect(queue.delayedWorkCount <= 128)
    }

    @Test(arguments: QueueMode.allCases) func releasingTheQueueCancelsDelayedWorkNotYetDue(mode: QueueMode) {
        var queue: SerialQueue? = mode.queue(label: "delayed-release")
        let handle = queue!.asyncAfter(delay: .seconds(3600)) {}
        queue = nil
        #expect(handle.status == .cancelled)
        #expect(!handle.cancel())
    }
}
