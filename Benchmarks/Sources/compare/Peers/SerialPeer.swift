import SerialRuntime

/// A peer that is one of this library's `SerialQueue`s: dedicated (`SerialPeer`) or on a
/// `WorkerPool` (`PooledPeer`). Only how the queue is made differs.
protocol SerialQueuePeer: Peer {
    var queue: SerialQueue { get }
}

extension SerialQueuePeer {
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

/// This library's `SerialQueue`, with its own thread.
struct SerialPeer: SerialQueuePeer {
    static let column = Column.serial
    let queue: SerialQueue

    init(label: String) {
        self.queue = SerialQueue(label: label)
    }
}
