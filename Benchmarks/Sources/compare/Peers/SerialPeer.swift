import SerialRuntime

/// This library's `SerialQueue`.
struct SerialPeer: Peer {
    static let column = Column.serial
    let queue: SerialQueue

    init(label: String) {
        self.queue = SerialQueue(label: label)
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
