import Dispatch

/// A serial `DispatchQueue` (swift-corelibs-libdispatch on Linux).
struct DispatchPeer: Peer {
    static let column = Column.dispatch
    let queue: DispatchQueue

    init(label: String) {
        self.queue = DispatchQueue(label: label)
    }

    @inline(__always)
    func execute(_ work: @escaping @Sendable () -> Void) {
        self.queue.async(execute: work)
    }

    @inline(__always)
    func syncCall() {
        self.queue.sync {}
    }

    func close() {
        self.drain()
    }
}
