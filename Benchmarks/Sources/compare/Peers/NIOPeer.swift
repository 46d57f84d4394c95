import NIOCore
import NIOPosix

/// A SwiftNIO event loop: a one-thread `MultiThreadedEventLoopGroup` of its own.
struct NIOPeer: Peer {
    static let column = Column.nio
    let group: MultiThreadedEventLoopGroup
    let loop: any EventLoop

    init(label: String) {
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.loop = self.group.next()
    }

    @inline(__always)
    func execute(_ work: @escaping @Sendable () -> Void) {
        self.loop.execute(work)
    }

    /// `submit {}.wait()` from outside the loop: NIO has no sync that runs on the caller.
    @inline(__always)
    func syncCall() {
        try! self.loop.submit {}.wait()
    }

    func close() {
        try! self.group.syncShutdownGracefully()
    }
}
