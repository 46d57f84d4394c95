import Glibc
import SerialRuntime

/// This library's `SerialQueue` on a `WorkerPool` shared by every pooled peer of the run (one
/// thread per core, or `COMPARE_POOL_THREADS` threads), as an application would share one pool
/// among many queues.
struct PooledPeer: SerialQueuePeer {
    static let column = Column.pooled
    /// Created on first use, so runs without the pooled column start no pool.
    static let pool: WorkerPool = {
        guard let text = getenv("COMPARE_POOL_THREADS"), let threads = Int(String(cString: text)), threads > 0 else {
            return WorkerPool(label: "cmp-pool")
        }
        return WorkerPool(threads: threads, label: "cmp-pool")
    }()
    let queue: SerialQueue

    init(label: String) {
        self.queue = SerialQueue(label: label, pool: Self.pool)
    }
}
