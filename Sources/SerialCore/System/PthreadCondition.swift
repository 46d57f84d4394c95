import Glibc

/// A pthread condition variable whose timed waits use `CLOCK_MONOTONIC`, so a change of
/// the wall clock can neither fire delayed work early nor hold it back.
///
/// - Invariant: `pointer` is initialised for the whole life of the object.
final class PthreadCondition {
    private let pointer: UnsafeMutablePointer<pthread_cond_t>
    #if SERIAL_SIMULATION
    /// This condition's identity in a simulation run (see `SimulationKernel`).
    var simulationTag = SimulationObjectTag()
    #endif

    init() {
        self.pointer = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        checkPthread(pthread_condattr_init(&attributes), "pthread_condattr_init")
        checkPthread(pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC), "pthread_condattr_setclock")
        checkPthread(pthread_cond_init(self.pointer, &attributes), "pthread_cond_init")
        checkPthread(pthread_condattr_destroy(&attributes), "pthread_condattr_destroy")
    }

    deinit {
        checkPthread(pthread_cond_destroy(self.pointer), "pthread_cond_destroy")
        self.pointer.deallocate()
    }

    // Seam: in a simulation build, a simulated thread's signal, broadcast and waits are
    // scheduling points on the model (`SimulationKernel`); the real signal still goes out, for
    // any waiter outside the simulation. Every other build and thread runs the plain calls.

    /// Wakes every waiter.
    func broadcast() {
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current { thread.kernel.signal(self, all: true, by: thread) }
        #endif
        checkPthread(pthread_cond_broadcast(self.pointer), "pthread_cond_broadcast")
    }

    /// Wakes one waiter, if any.
    @inline(__always)
    func signal() {
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current { thread.kernel.signal(self, all: false, by: thread) }
        #endif
        checkPthread(pthread_cond_signal(self.pointer), "pthread_cond_signal")
    }

    /// Sleeps until signalled (or woken spuriously). `mutex` must be held by the caller.
    @inline(__always)
    func wait(releasing mutex: PthreadMutex) {
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current {
            return thread.kernel.wait(on: self, releasing: mutex, until: nil, by: thread)
        }
        #endif
        #if SERIAL_LOCK_STATISTICS
        mutex.statistics.releasing()
        defer { mutex.statistics.acquired(contended: false) }
        #endif
        checkPthread(pthread_cond_wait(self.pointer, mutex.pointer), "pthread_cond_wait")
    }

    /// Sleeps until signalled, woken spuriously, or `deadline` on the monotonic clock has passed.
    /// `mutex` must be held by the caller.
    func wait(releasing mutex: PthreadMutex, until deadline: MonotonicInstant) {
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current {
            return thread.kernel.wait(on: self, releasing: mutex, until: deadline.nanoseconds, by: thread)
        }
        #endif
        var time = timespec(
            tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
            tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        #if SERIAL_LOCK_STATISTICS
        mutex.statistics.releasing()
        defer { mutex.statistics.acquired(contended: false) }
        #endif
        let rc = pthread_cond_timedwait(self.pointer, mutex.pointer, &time)
        if _slowPath(rc != 0 && rc != ETIMEDOUT) { fatalError("pthread_cond_timedwait failed with error \(rc)") }
    }
}
