import SerialCore
import SerialTestSupport
import Testing

/// Promise (WorkerPool docs, `PoolState.enqueue(ahead:)`): delayed work that falls due while the
/// pool is busy runs in the order it fell due, ahead of the queues waiting for a thread; queues
/// falling due at the same instant, in the order they were scheduled. Ordered by the run queue,
/// not by time: the one pool thread is held until everything waits there.
@Suite("WorkerPool due order: ties", .onItsOwnThread)
struct WorkerPoolDueOrderTieTests {
    /// Six queues whose delayed work falls due at the same instant, armed in order 0...5, while the
    /// one thread is held: they fell due together, so the order they were scheduled in is the only
    /// order there is (a binary heap alone broke the tie as 0, 5, 4, 3, 2, 1).
    @Test func queuesFallingDueAtTheSameInstantRunInTheOrderTheyWereScheduled() {
        let pool = WorkerPool(threads: 1, label: "pool-due-ties")
        let busy = SerialQueue(label: "busy", pool: pool)
        let delayed = (0..<6).map { SerialQueue(label: "tie\($0)", pool: pool) }
        let order = LockedValue<[Int]>([])
        let held = TestSemaphore()
        let gate = TestSemaphore()
        let allRan = TestSemaphore()
        busy.async {
            held.signal()
            _ = gate.wait(timeout: .seconds(30))
        }
        #expect(held.wait(), "the pool thread never took the held item")
        let deadline = MonotonicInstant.now().advanced(by: .milliseconds(200))
        for (index, queue) in delayed.enumerated() {
            queue.asyncAfter(deadline: deadline) {
                let count = order.withLock { order in
                    order.append(index)
                    return order.count
                }
                if count == delayed.count { allRan.signal() }
            }
        }
        #expect(
            eventually(timeout: .seconds(20)) { pool._runQueueCount == delayed.count },
            "the six never all reached the run queue")
        gate.signal()
        #expect(allRan.wait(), "the due work never all ran")
        #expect(order.withLock { $0 } == Array(0..<6), "ties fell due out of the order they were scheduled in")
    }
}
