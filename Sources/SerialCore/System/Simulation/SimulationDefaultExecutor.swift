#if SERIAL_SIMULATION
@_spi(ExperimentalScheduling) @_spi(ExperimentalCustomExecutors) import _Concurrency

/// The process's default executor in simulation builds: the platform's (Dispatch, on Linux) for
/// every job, except jobs of an async run's tasks while the run lasts, which go to the run.
///
/// **Why.** A sleep's wake-up goes to `Task.currentSchedulingExecutor`, and when nothing on the
/// thread schedules it goes to `Task.defaultExecutor` directly, past the runtime's delayed-enqueue
/// hooks: a sleep on a default actor in a task with no executor preference, in a task preferring
/// `globalConcurrentExecutor`, or preferring a `SerialQueue` or `WorkerPool` of the run (they
/// do not schedule). Measured on Swift 6.3.1: each of those reaches the default executor, and
/// `_createExecutors(factory:)` (the executor factory SPI) replaces it at run time, plain
/// enqueues included. So every such sleep waits on the run's virtual time instead of Dispatch's
/// real time, and never wakes its task on a thread outside the run.
///
/// **Installed once**, by the controlling thread before the process's first async run, and
/// kept: with no run active it only forwards. The swap writes a process-wide variable that
/// other threads may be reading at that instant (the runtime gives no lock); a test process of
/// a simulation build accepts that once, before its first async run. The main executor stays
/// the platform's.
final class SimulationDefaultExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {  // immutable
    /// The executor it replaced.
    let platform: any TaskExecutor

    private init(platform: any TaskExecutor) {
        self.platform = platform
    }

    /// Makes it the default executor, the first time only.
    static func installOnce() { _ = Self.installed }

    private static let installed: Void = {
        Factory.main = MainActor.executor
        Factory.default = SimulationDefaultExecutor(platform: Task.defaultExecutor)
        _createExecutors(factory: Factory.self)
    }()

    /// What `_createExecutors` reads (set just before it, by one thread, under `installed`'s once).
    private enum Factory: ExecutorFactory {
        nonisolated(unsafe) static var main: (any MainExecutor)?
        nonisolated(unsafe) static var `default`: (any TaskExecutor)?
        static var mainExecutor: any MainExecutor { Self.main! }
        static var defaultExecutor: any TaskExecutor { Self.default! }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !SimulationTasks.route(job, afterNanoseconds: nil) { self.platform.enqueue(ExecutorJob(job)) }
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        let unowned = UnownedJob(job)
        if let delay = delay as? Duration,
            SimulationTasks.route(unowned, afterNanoseconds: UInt64(clamping: delay.saturatingNanoseconds))
        {
            return
        }
        self.scheduling.enqueue(ExecutorJob(unowned), after: delay, tolerance: tolerance, clock: clock)
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        let unowned = UnownedJob(job)
        // An instant of a real clock, read now (the run's virtual time starts from it): rounded
        // as the run's own executor rounds it, so the same sleep gives the same delay.
        if let delay = clock.now.duration(to: instant) as? Duration,
            SimulationTasks.route(
                unowned,
                afterNanoseconds: UInt64(clamping: SimulationTaskExecutor.rounded(delay).saturatingNanoseconds))
        {
            return
        }
        self.scheduling.enqueue(ExecutorJob(unowned), at: instant, tolerance: tolerance, clock: clock)
    }

    /// The platform's default executor schedules (Dispatch's does).
    private var scheduling: any SchedulingExecutor {
        guard let scheduling = self.platform as? any SchedulingExecutor else {
            fatalError("SerialTesting simulation: the platform's default executor does not schedule delayed jobs")
        }
        return scheduling
    }
}
#endif
