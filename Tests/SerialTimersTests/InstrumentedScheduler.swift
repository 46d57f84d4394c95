import SerialCore
import SerialTesting
import Synchronization

/// A `VirtualScheduler` that counts the delayed wake-ups armed on it (how often a service calls
/// its scheduler) and can make the next one run late, as a busy real queue would run a wake-up
/// (the way to make a repeating timer miss periods on virtual time).
final class InstrumentedScheduler: Scheduling {
    let base = VirtualScheduler()
    private let scheduled = Atomic<Int>(0)
    private let lateness = Atomic<Int64>(0)

    var scheduleCalls: Int { self.scheduled.load(ordering: .relaxed) }
    var now: MonotonicInstant { self.base.now }
    var isCurrent: Bool { self.base.isCurrent }

    /// The next `schedule` call's work runs `delay` after its deadline.
    func delayNextWakeUp(by delay: Duration) {
        self.lateness.store(Int64(delay.saturatingNanoseconds), ordering: .sequentiallyConsistent)
    }

    func execute(_ work: @escaping @Sendable () -> Void) throws(SchedulingError) { try self.base.execute(work) }

    @discardableResult
    func schedule(
        at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void
    ) throws(SchedulingError) -> DelayedWork {
        self.scheduled.add(1, ordering: .relaxed)
        let late = self.lateness.exchange(0, ordering: .sequentiallyConsistent)
        return try self.base.schedule(at: deadline + .nanoseconds(late), work)
    }

    func whenShutDown(_ handler: @escaping @Sendable (SchedulingError) -> Void) -> ShutdownSubscription {
        self.base.whenShutDown(handler)
    }
}
