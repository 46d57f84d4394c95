import Glibc

/// Fails loudly when a pthread call returns an error: these only fail on our own bugs.
@inline(__always)
func checkPthread(_ rc: Int32, _ call: StaticString, file: StaticString = #fileID, line: UInt = #line) {
    if _slowPath(rc != 0) {
        fatalError("\(call) failed with error \(rc) (internal inconsistency: please report)", file: file, line: line)
    }
}

/// A pthread mutex at a stable heap address (pthread objects must never move).
///
/// Debug builds use an error-checking mutex, so relocking from the owning thread or
/// unlocking from another thread traps instead of deadlocking silently. Release builds use
/// glibc's adaptive mutex, which spins briefly before sleeping: every critical section here is
/// a few loads and stores, so a contended lock is almost always free again within the spin,
/// and sleeping on it costs a context switch on each side (measured with `compare`: pooled
/// `async_1p` 408–699 → 107–117 ns, `sync_contended` 1,109–1,817 → 615–903 ns).
///
/// - Invariant: `pointer` is initialised for the whole life of the object.
final class PthreadMutex {
    let pointer: UnsafeMutablePointer<pthread_mutex_t>
    #if SERIAL_SIMULATION
    /// This mutex's identity in a simulation run (see `SimulationKernel`).
    var simulationTag = SimulationObjectTag()
    #endif
    #if SERIAL_LOCK_STATISTICS
    /// Acquisitions and hold times (an instrumented build only); guarded by this mutex.
    var statistics = LockStatistics()
    #endif

    init() {
        self.pointer = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        checkPthread(pthread_mutexattr_init(&attributes), "pthread_mutexattr_init")
        #if DEBUG
        checkPthread(
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK)), "pthread_mutexattr_settype")
        #else
        checkPthread(
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP)), "pthread_mutexattr_settype")
        #endif
        checkPthread(pthread_mutex_init(self.pointer, &attributes), "pthread_mutex_init")
        checkPthread(pthread_mutexattr_destroy(&attributes), "pthread_mutexattr_destroy")
    }

    deinit {
        checkPthread(pthread_mutex_destroy(self.pointer), "pthread_mutex_destroy")
        self.pointer.deallocate()
    }

    // Seam: in a simulation build, a simulated thread's lock and unlock are scheduling points
    // (`SimulationKernel`); every other build and thread runs the plain call.
    @inline(__always)
    func lock() {
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current { return thread.kernel.lock(self, by: thread) }
        #endif
        #if SERIAL_LOCK_STATISTICS
        let contended = pthread_mutex_trylock(self.pointer) != 0
        if contended { checkPthread(pthread_mutex_lock(self.pointer), "pthread_mutex_lock") }
        self.statistics.acquired(contended: contended)
        #else
        checkPthread(pthread_mutex_lock(self.pointer), "pthread_mutex_lock")
        #endif
    }

    @inline(__always)
    func unlock() {
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current { return thread.kernel.unlock(self, by: thread) }
        #endif
        #if SERIAL_LOCK_STATISTICS
        self.statistics.releasing()
        #endif
        checkPthread(pthread_mutex_unlock(self.pointer), "pthread_mutex_unlock")
    }

    @inline(__always)
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        self.lock()
        defer { self.unlock() }
        return try body()
    }
}
