import SerialCore
import SerialTesting
import Synchronization

/// A `VirtualScheduler` whose next delayed work can be made to run late, as a busy real
/// queue would run a wake-up: the way to make a repeating timer miss periods on virtual time.
final class LateScheduler: Scheduling {
    let base = VirtualScheduler()
    private let lateness = Atomic<Int64>(0)

    /// The next `schedule` call's work runs `delay` after its deadline.
    func delayNextWakeUp(by delay: Duration) {
        self.lateness.store(Int64(delay.saturatingNanoseconds), ordering: .sequentiallyConsistent)
    }

    var now: MonotonicInstant { self.base.now }
    var isCurrent: Bool { self.base.isCurrent }

    func execute(_ work: @escaping @Sendable () -> Void) throws(SchedulingError) { try self.base.execute(work) }

    @discardableResult
    func schedule(
        at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void
    ) throws(SchedulingError) -> DelayedWork {
        let late = self.lateness.exchange(0, ordering: .sequentiallyConsistent)
        return try self.base.schedule(at: deadline + .nanoseconds(late), work)
    }

    func whenShutDown(_ handler: @escaping @Sendable (SchedulingError) -> Void) -> ShutdownSubscription {
        self.base.whenShutDown(handler)
    }
}
