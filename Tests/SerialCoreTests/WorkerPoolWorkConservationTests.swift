import SerialCore
import SerialTestSupport
import Testing

/// The pool is work-conserving: a queue that becomes runnable never waits while a pool thread is
/// idle or could be woken, wherever it was made runnable (from a pool thread's own work, or from
/// outside after such work touched it). Width 1 has no second thread to run it: the waits below
/// would be right to time out there (the blocking case of width 1 is in WorkerPoolBlockingTests).
///
/// Each scenario holds a pool thread in work that does not return (a foreign blocking wait, or a
/// busy loop) until the other queue's work ran or `patience` passed, and fails with what it saw.
@Suite("WorkerPool work conservation", .onItsOwnThread)  // waits for pool work: off the cooperative threads
struct WorkerPoolWorkConservationTests {
    /// Long enough for a loaded machine to run a freed thread; only a failing case waits it out.
    static let patience = Duration.seconds(20)

    /// Holds one pool thread per queue in `queues` busy (one item each) until the returned
    /// semaphore is signalled once per queue.
    static func occupyThreads(with queues: [SerialQueue]) -> TestSemaphore {
        let busy = TestSemaphore()
        let release = TestSemaphore()
        for queue in queues {
            queue.async {
                busy.signal()
                _ = release.wait(timeout: Self.patience)
            }
        }
        for _ in queues { #expect(busy.wait(), "the other threads never got busy") }
        return release
    }

    /// How a's long item holds its pool thread: in a wait the pool does not know about, or busy.
    enum LongItem: String, CaseIterable, Sendable, CustomStringConvertible {
        case foreignWait, busyLoop
        var description: String { self.rawValue }

        /// Holds the thread until `done` is set or `patience` passed; returns whether `done` was set.
        func hold(until done: TestSemaphore) -> Bool {
            switch self {
            case .foreignWait:
                return done.wait(timeout: WorkerPoolWorkConservationTests.patience)
            case .busyLoop:
                let limit = monotonicNow() + UInt64(WorkerPoolWorkConservationTests.patience.components.seconds) * 1_000_000_000
                while monotonicNow() < limit {
                    if done.wait(timeout: .zero) { return true }
                }
                return false
            }
        }
    }

    @Test(arguments: 2...4, LongItem.allCases)
    func workPostedByAPoolThreadRunsOnAnIdleThreadWhileItsItemGoesOn(width: Int, item: LongItem) {
        let pool = WorkerPool(threads: width, label: "wc-post")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let sawIt = TestFlag()
        let done = TestSemaphore()
        a.async {
            let bRan = TestSemaphore()
            b.async { bRan.signal() }
            // Only another thread can run b's work before this item ends.
            if item.hold(until: bRan) { sawIt.set() }
            done.signal()
        }
        #expect(done.wait(), "a's work never finished")
        #expect(sawIt.isSet, "b's work did not run within \(Self.patience) while \(width - 1) of \(width) pool threads idled")
    }

    /// With every other thread busy, work that a pool thread posts waits in that thread's `next`
    /// slot; the first thread that runs out of work takes it from there while the posting item
    /// still runs.
    @Test(arguments: 2...4)
    func workPostedWhileEveryThreadIsBusyRunsOnTheFirstThreadThatFreesUp(width: Int) {
        let pool = WorkerPool(threads: width, label: "wc-steal")
        let others = (1..<width).map { SerialQueue(label: "other\($0)", pool: pool) }
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let posted = TestSemaphore()
        let sawIt = TestFlag()
        let done = TestSemaphore()
        let releaseOthers = Self.occupyThreads(with: others)
        a.async {
            let bRan = TestSemaphore()
            b.async { bRan.signal() }  // no other thread is free: b waits in this thread's slot
            posted.signal()
            if bRan.wait(timeout: Self.patience) { sawIt.set() }
            done.signal()
        }
        #expect(posted.wait(), "a's work never ran")
        releaseOthers.signal(others.count)
        #expect(done.wait(), "a's work never finished")
        #expect(sawIt.isSet, "b's work waited for a's item after \(width - 1) pool threads had freed up")
    }

    /// Beyond the `next` slot, work a busy pool thread posts waits in its own run queue; threads
    /// that free up steal it from there (half at a time) while the posting item still runs.
    @Test(arguments: 2...4)
    func workQueuedInABusyThreadsOwnRunQueueRunsOnThreadsThatFreeUp(width: Int) {
        let pool = WorkerPool(threads: width, label: "wc-local")
        let others = (1..<width).map { SerialQueue(label: "other\($0)", pool: pool) }
        let a = SerialQueue(label: "a", pool: pool)
        let posted = (0..<5).map { SerialQueue(label: "posted\($0)", pool: pool) }
        let postedAll = TestSemaphore()
        let sawAll = TestFlag()
        let done = TestSemaphore()
        let releaseOthers = Self.occupyThreads(with: others)
        a.async {
            let ran = TestSemaphore()
            // No other thread is free: the first waits in `next`, the rest in this thread's own run queue.
            for queue in posted { queue.async { ran.signal() } }
            postedAll.signal()
            if posted.allSatisfy({ _ in ran.wait(timeout: Self.patience) }) { sawAll.set() }
            done.signal()
        }
        #expect(postedAll.wait(), "a's work never ran")
        releaseOthers.signal(others.count)
        #expect(done.wait(), "a's work never finished")
        #expect(sawAll.isSet, "work queued behind a's item waited for it after \(width - 1) pool threads had freed up")
    }

    @Test(arguments: 2...4)
    func workSubmittedFromOutsideAfterASyncFromAPoolThreadDoesNotWaitForThatThread(width: Int) {
        let pool = WorkerPool(threads: width, label: "wc-sync")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let entered = TestSemaphore()
        let release = TestSemaphore()
        let done = TestSemaphore()
        let gate = TestSemaphore()
        b.async { _ = gate.wait(timeout: Self.patience) }  // b is busy: a's sync below waits for its turn
        a.async {
            b.sync {}  // handed over by b's turn on another thread; leaving it schedules b
            entered.signal()
            _ = release.wait(timeout: Self.patience)  // a long item
            done.signal()
        }
        #expect(eventually { b.statistics.submitted == 2 }, "a's sync never queued behind b's work")
        gate.signal()
        #expect(entered.wait(), "a's work never ran")
        let bRan = TestSemaphore()
        b.async { bRan.signal() }
        let ranMeanwhile = bRan.wait(timeout: Self.patience)
        release.signal()
        #expect(done.wait(), "a's work never finished")
        #expect(ranMeanwhile, "b's work waited for a's long item while \(width - 1) of \(width) pool threads idled")
        #expect(ranMeanwhile || bRan.wait(), "b's work never ran")
    }
}
