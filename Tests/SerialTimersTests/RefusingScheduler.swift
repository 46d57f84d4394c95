import SerialCore
import SerialTesting
import Synchronization

/// A `VirtualScheduler` that can start refusing work before its shutdown handlers run: the
/// window in which a service discovers the shutdown through a throwing call.
final class RefusingScheduler: Scheduling {
    let base: VirtualScheduler
    private let refusing = Atomic<Bool>(false)

    init(label: String = "refusing") { self.base = VirtualScheduler(label: label) }

    /// From now on `execute` and `schedule` throw `.shutDown`; handlers wait for `base.shutdown`.
    func refuse() { self.refusing.store(true, ordering: .sequentiallyConsistent) }

    var now: MonotonicInstant { self.base.now }
    var isCurrent: Bool { self.base.isCurrent }

    func execute(_ work: @escaping @Sendable () -> Void) throws(SchedulingError) {
        if self.refusing.load(ordering: .sequentiallyConsistent) { throw .shutDown(scheduler: self.base.label) }
        try self.base.execute(work)
    }

    @discardableResult
    func schedule(
        at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void
    ) throws(SchedulingError) -> DelayedWork {
        if self.refusing.load(ordering: .sequentiallyConsistent) { throw .shutDown(scheduler: self.base.label) }
        return try self.base.schedule(at: deadline, work)
    }

    func whenShutDown(_ handler: @escaping @Sendable (SchedulingError) -> Void) -> ShutdownSubscription {
        self.base.whenShutDown(handler)
    }
}
