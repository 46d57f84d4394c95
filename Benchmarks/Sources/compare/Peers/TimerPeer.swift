import Dispatch
import NIOCore
import NIOPosix

/// One timer facility under test: schedule a callback after a delay, cancel it by handle.
protocol TimerPeer: Sendable {
    associatedtype Handle
    static var column: Column { get }
    /// Why this peer cannot be measured in this build, if it cannot (its column then prints n/a).
    static var unavailableReason: String? { get }
    init(label: String)
    /// Runs `work` once `nanoseconds` have passed, unless cancelled.
    func schedule(afterNanoseconds nanoseconds: Int64, _ work: @escaping @Sendable () -> Void) -> Handle
    /// Runs `work` once `nanoseconds` have passed, with the peer's most precise setting, or within
    /// `tolerance` nanoseconds after that when the peer takes a tolerance (`nil`: most precise).
    func schedule(afterNanoseconds nanoseconds: Int64, tolerance: Int64?, _ work: @escaping @Sendable () -> Void)
    func cancel(_ handle: Handle)
    /// Runs `work` on the thread (or queue) the callbacks run on, to learn its thread id.
    func execute(_ work: @escaping @Sendable () -> Void)
    /// Drops what is pending and reclaims threads.
    func close()
}

extension TimerPeer {
    static var unavailableReason: String? { nil }

    /// Peers without a tolerance are as precise as their `schedule`.
    func schedule(afterNanoseconds nanoseconds: Int64, tolerance: Int64?, _ work: @escaping @Sendable () -> Void) {
        _ = self.schedule(afterNanoseconds: nanoseconds, work)
    }
}

/// `DispatchQueue.asyncAfter` with a `DispatchWorkItem`, cancelled through the item.
struct DispatchTimerPeer: TimerPeer {
    static let column = Column.dispatch
    let queue: DispatchQueue

    init(label: String) {
        self.queue = DispatchQueue(label: label)
    }

    @inline(__always)
    func schedule(afterNanoseconds nanoseconds: Int64, _ work: @escaping @Sendable () -> Void) -> DispatchWorkItem {
        let item = DispatchWorkItem(block: work)
        self.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds)), execute: item)
        return item
    }

    @inline(__always)
    func cancel(_ handle: DispatchWorkItem) {
        handle.cancel()
    }

    /// `asyncAfter` lets libdispatch pick a leeway (a tenth of the delay, at least 1 ms), so a
    /// precise timer is a one-shot `DispatchSourceTimer` with `.strict` and the leeway asked
    /// (zero for the most precise). The handler holds its source until it fires and cancels it.
    func schedule(afterNanoseconds nanoseconds: Int64, tolerance: Int64?, _ work: @escaping @Sendable () -> Void) {
        let source = DispatchSource.makeTimerSource(flags: tolerance == nil ? .strict : [], queue: self.queue)
        source.setEventHandler { [source] in
            work()
            source.cancel()
        }
        source.schedule(
            deadline: .now() + .nanoseconds(Int(nanoseconds)), repeating: .never,
            leeway: .nanoseconds(Int(tolerance ?? 0)))
        source.activate()
    }

    func execute(_ work: @escaping @Sendable () -> Void) {
        self.queue.async(execute: work)
    }

    /// Cancelled items stay in libdispatch's timer list until their deadline; nothing to drop.
    func close() {}
}

/// SwiftNIO `scheduleTask(in:)` on a one-thread event loop group, cancelled through `Scheduled`.
struct NIOTimerPeer: TimerPeer {
    static let column = Column.nio
    let group: MultiThreadedEventLoopGroup
    let loop: any EventLoop

    init(label: String) {
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.loop = self.group.next()
    }

    @inline(__always)
    func schedule(afterNanoseconds nanoseconds: Int64, _ work: @escaping @Sendable () -> Void) -> Scheduled<Void> {
        self.loop.scheduleTask(in: .nanoseconds(nanoseconds), work)
    }

    @inline(__always)
    func cancel(_ handle: Scheduled<Void>) {
        handle.cancel()
    }

    func execute(_ work: @escaping @Sendable () -> Void) {
        self.loop.execute(work)
    }

    func close() {
        try! self.group.syncShutdownGracefully()
    }
}
