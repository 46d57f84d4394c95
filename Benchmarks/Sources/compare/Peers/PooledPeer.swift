import SerialRuntime

/// This library's `SerialQueue` on a `WorkerPool` shared by every pooled peer of the run (one
/// thread per core), as an application would share one pool among many queues.
struct PooledPeer: Peer {
    static let column = Column.pooled
    /// Created on first use, so runs without the pooled column start no pool.
    static let pool = WorkerPool(label: "cmp-pool")
    let queue: SerialQueue

    init(label: String) {
        self.queue = SerialQueue(label: label, pool: Self.pool)
    }

    @inline(__always)
    func execute(_ work: @escaping @Sendable () -> Void) {
        self.queue.async(work)
    }

    @inline(__always)
    func syncCall() {
        self.queue.sync {}
    }

    func close() {
        self.queue.shutdown(.drain)
    }
}
