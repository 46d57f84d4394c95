#if SERIAL_SIMULATION
import Glibc

/// A real pthread that belongs to a simulation run: it runs only while it holds the run's
/// baton (`SimulationKernel.running`), and each seam operation it makes is a scheduling point.
///
/// Every field but `wake` is guarded by the kernel's lock.
final class SimulatedThread: @unchecked Sendable {  // mutable state guarded by `kernel.lock`
    /// Creation order within the run, from 0 (the scenario's own thread): deterministic.
    let id: Int
    let name: String
    let kernel: SimulationKernel
    /// Posted when this thread is given the baton, after the kernel lock is released (so the
    /// thread woken does not wake into a held lock): `SimulationKernel.leave`.
    private let baton: UnsafeMutablePointer<sem_t>
    var state: State = .ready
    /// Whether a timed wait ended by its deadline rather than a signal.
    var timedOut = false
    /// The thread's queue stack, for deadlock reports (which queues it holds).
    var stack: CurrentQueueStack?
    /// The pthread, once created (for `join`).
    var handle: pthread_t?
    /// How deep the thread is in calls the Swift runtime makes into an executor (`RuntimeCallback`),
    /// during which it may hold a lock of its own: while above 0 the thread keeps the baton.
    var runtimeCallbacks = 0

    /// What the thread does at its current scheduling point.
    enum State: Equatable {
        /// Running, or may run.
        case ready
        /// Wants mutex `mutex`: may run when it is free.
        case locking(mutex: Int)
        /// Waiting on condition `condition` (its mutex released); `deadline` for a timed wait.
        case waiting(condition: Int, mutex: Int, deadline: UInt64?)
        /// Waiting for thread `thread` to finish.
        case joining(thread: Int)
        /// Waiting until no other thread can run and no timed wait is left (`waitUntilQuiescent`).
        case awaitingQuiescence
        case finished
    }

    init(id: Int, name: String, kernel: SimulationKernel) {
        self.id = id
        self.name = name
        self.kernel = kernel
        self.baton = .allocate(capacity: 1)
        if sem_init(self.baton, 0, 0) != 0 { fatalError("simulation: sem_init failed with errno \(errno)") }
    }

    // Never deinitialised while a run may still touch it: the kernel keeps every thread.
    deinit {
        sem_destroy(self.baton)
        self.baton.deallocate()
    }

    /// Gives the thread the baton it was picked for (by the thread that picked it, after
    /// releasing the kernel lock).
    func giveBaton() {
        if sem_post(self.baton) != 0 { fatalError("simulation: sem_post failed with errno \(errno)") }
    }

    /// Sleeps until given the baton (by the thread itself, without the kernel lock).
    func waitForBaton() {
        while sem_wait(self.baton) != 0 {
            if errno != EINTR { fatalError("simulation: sem_wait failed with errno \(errno)") }
        }
    }

    /// "T2 \"db\"" for reports.
    var title: String { "T\(self.id) \"\(self.name)\"" }

    // MARK: Which thread the calling one is

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        checkPthread(pthread_key_create(&key, nil), "pthread_key_create")
        return key
    }()

    /// The calling thread's record while it takes part in a running simulation, else `nil`:
    /// then every seam operation is the ordinary one.
    @inline(__always)
    static var current: SimulatedThread? {
        guard let pointer = pthread_getspecific(Self.key) else { return nil }
        return Unmanaged<SimulatedThread>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Marks the calling thread as `thread` (the kernel retains every record for the run).
    static func setCurrent(_ thread: SimulatedThread?) {
        let pointer = thread.map { Unmanaged.passUnretained($0).toOpaque() }
        checkPthread(pthread_setspecific(Self.key, pointer), "pthread_setspecific")
    }
}
#endif
