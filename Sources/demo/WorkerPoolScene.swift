import Glibc
import SerialRuntime
import Synchronization

/// Issue 16: ten thousand serial queues on a pool of a few threads, each keeping its own order.
enum WorkerPoolScene {
    static func run() {
        print("== WorkerPool: 10,000 serial queues on a few threads ==")
        let pool = WorkerPool(threads: 2, label: "demo.pool")
        let count = 10_000
        let steps = 3
        let threads = Mutex<[UInt: (name: String, items: Int)]>([:])
        let outOfOrder = Atomic<Int>(0)
        let finished = Atomic<Int>(0)
        let started = ContinuousClock.now
        let queues = (0..<count).map { SerialQueue(label: "conn-\($0)", pool: pool) }
        for queue in queues {
            let cursor = StepCursor()
            for step in 0..<steps {
                queue.async {
                    let thread = UInt(pthread_self())
                    threads.withLock { $0[thread, default: (currentThreadLabel(), 0)].items += 1 }
                    // Per-queue FIFO: each queue sees its own steps in order, whatever thread runs them.
                    if cursor.next.exchange(step + 1, ordering: .relaxed) != step { outOfOrder.add(1, ordering: .relaxed) }
                    if step == steps - 1 { finished.add(1, ordering: .releasing) }
                }
            }
        }
        // A sync body runs here, on the main thread, at its turn in the queue's order.
        let syncThread = queues[42].sync { currentThreadLabel() }
        for queue in queues { queue.shutdown() }
        let elapsed = ContinuousClock.now - started
        let milliseconds = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        print("\(count) queues × \(steps) async steps ran in \(milliseconds) ms")
        for (index, entry) in threads.withLock({ Array($0.values) }).enumerated() {
            print("  pool thread \(index + 1) (named \"\(entry.name)\") ran \(entry.items) items")
        }
        print("  queues finished: \(finished.load(ordering: .acquiring)), steps out of order: \(outOfOrder.load(ordering: .relaxed))")
        print("  queues[42].sync ran on \"\(syncThread)\" (the caller's thread)")
        pool.shutdown()
        print("Every queue kept its own order on 2 shared threads; none had a thread of its own.\n")
    }
}

/// The step a queue expects next.
private final class StepCursor: Sendable {
    let next = Atomic<Int>(0)
}
