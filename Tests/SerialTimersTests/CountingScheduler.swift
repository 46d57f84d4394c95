import SerialCore
import SerialTesting
import Synchronization

/// A `VirtualScheduler` that counts the delayed wake-ups armed on it, to check how often a
/// service calls its scheduler.
final class CountingScheduler: Scheduling {
    let base = VirtualScheduler()
    private let scheduled = Atomic<Int>(0)

    var scheduleCalls: Int { self.scheduled.load(ordering: .relaxed) }
    var now: MonotonicInstant { self.base.now }
    var isCurrent: Bool { self.base.isCurrent }

    func execute(_ work: @escaping @Sendable () -> Void) throws(SchedulingError) { try self.base.execute(work) }

    @discardableResult
    func schedule(
        at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void
    ) throws(SchedulingError) -> DelayedWork {
        self.scheduled.add(1, ordering: .relaxed)
        return try self.base.schedule(at: deadline, work)
    }

    func whenShutDown(_ handler: @escaping @Sendable (SchedulingError) -> Void) -> ShutdownSubscription {
        self.base.whenShutDown(handler)
    }
}
