extension SerialQueue {
    /// Creates a queue whose work runs on `pool`'s threads instead of a thread of its own.
    ///
    /// Every guarantee of `SerialQueue` holds (see `WorkerPool` for what differs: which thread
    /// runs `async` work, and that blocking such work in other ways than this library's waits
    /// holds a pool thread). Creating it starts no thread and costs a few hundred bytes.
    ///
    /// - Parameters:
    ///   - label: names the queue in traps and errors.
    ///   - pool: the pool whose threads run its work; the queue keeps the pool alive.
    ///   - maximumQueued: as for `init(label:maximumQueued:)`.
    /// - Precondition: `pool` is not shut down (otherwise this traps; use
    ///   `make(label:pool:maximumQueued:)` to get an error), and `maximumQueued` ≥ 1.
    public convenience init(label: String, pool: WorkerPool, maximumQueued: Int = .max) {
        do {
            try self.init(attachingTo: pool, label: label, maximumQueued: maximumQueued)
        } catch {
            Misuse.queueOnShutDownPool(error)
        }
    }

    /// Creates a queue on `pool` like `init(label:pool:maximumQueued:)`, but reports a shut-down
    /// pool as an error instead of a trap.
    ///
    /// - Throws: `SerialQueueError.poolShutDown`.
    public static func make(
        label: String, pool: WorkerPool, maximumQueued: Int = .max
    ) throws(SerialQueueError) -> SerialQueue {
        try SerialQueue(attachingTo: pool, label: label, maximumQueued: maximumQueued)
    }

    private convenience init(attachingTo pool: WorkerPool, label: String, maximumQueued: Int) throws(SerialQueueError) {
        if maximumQueued < 1 { Misuse.invalidMaximumQueued(label: label, maximumQueued) }
        let core = QueueCore(label: label, maximumQueued: maximumQueued, pool: pool.core)
        guard pool.core.attach(core) else {
            throw SerialQueueError.poolShutDown(label: label, pool: pool.label)
        }
        self.init(label: label, core: core, pool: pool)
    }

    /// Whether this queue runs on a `WorkerPool` (rather than a thread of its own).
    public var isPooled: Bool { self.pool != nil }
}
