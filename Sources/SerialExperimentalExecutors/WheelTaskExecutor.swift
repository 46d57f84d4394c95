import SerialCore
import SerialTimers

/// A task executor on a `WorkerPool` whose delayed jobs wait on a `TimerService`'s wheel:
/// `Task.sleep` inside a task that prefers it arms one wheel timer instead of a Dispatch timer.
///
/// **Experimental.** The delayed half is Swift 6.3's `SchedulingExecutor`, still SPI
/// (`@_spi(ExperimentalScheduling)`): this product may change or go when the protocol does.
///
/// ```swift
/// let executor = WheelTaskExecutor(threads: 2, label: "app")
/// let woke = await Task(executorPreference: executor) {
///     try? await Task.sleep(for: .milliseconds(5))   // a timer on the executor's wheel, no Dispatch
///     return true
/// }.value
/// ```
///
/// **Jobs.** A job runs on one of the pool's threads, as soon as one is free, with the pool's
/// work conservation (see `WorkerPool`); several jobs run at once, one per free thread. Child
/// tasks inherit the preference. Serial state belongs in actors on `SerialQueue`s created on
/// `pool`, which share its threads.
///
/// **Sleeps.** The runtime hands a sleep of a task that prefers this executor to it as a delayed
/// job (`enqueue(_:at:tolerance:clock:)`). The job waits as one timer on `timers` and, when the
/// timer fires, goes to the pool like any other job: never before its deadline, and within the
/// tolerance after it as `TimerService.schedule(at:tolerance:_:)` promises (`nil`: one tick of
/// the service). A `SuspendingClock` deadline converts exactly (both count `CLOCK_MONOTONIC`); a
/// `ContinuousClock` deadline (the clock of `Task.sleep(for:)`) becomes the delay left until it,
/// read on that clock when the job arrives, from the service's `now` (the two clocks differ only
/// by time the machine spent suspended). See `SchedulingExecutor` conformance for other clocks.
///
/// **Cancellation.** Cancelling a sleeping task ends its sleep at once (the runtime resumes it
/// with `CancellationError`), but the runtime's wake-up job stays on the wheel until its deadline,
/// when it runs and finds nothing to do: about 0.5 KB held per cancelled sleep until then
/// (measured: 100k cancelled sleeps held 47 MiB of heap until their deadline; on Dispatch, about
/// 70 MiB). For sleeps that free everything when cancelled, use `WheelClock`.
///
/// **Identity.** This executor takes its pool's task jobs over: they run as this executor, the
/// identity tasks that prefer it were given. A task that prefers the bare `pool` traps, naming
/// this executor; queues created on the pool are unaffected.
///
/// - Precondition: tasks that prefer the executor (sleeping ones included) end before its
///   `shutdown()`.
public final class WheelTaskExecutor: TaskExecutor, Sendable, CustomStringConvertible {
    /// The threads jobs run on (queues may be created on it too).
    public let pool: WorkerPool
    /// The service whose wheel holds delayed jobs until they fall due.
    public let timers: TimerService
    /// Names the executor, its pool's threads and its traps.
    public let label: String

    /// Starts an executor with its own pool of `threads` threads and a timer service of resolution
    /// `tick` on a queue of that pool (no other thread).
    ///
    /// - Precondition: `threads` ≥ 1 and `tick` at least one nanosecond; otherwise this traps
    ///   (as `WorkerPool` and `TimerService` do).
    public convenience init(
        threads: Int = WorkerPool.defaultThreadCount, label: String = "WheelExecutor", tick: Duration = .milliseconds(1)
    ) {
        let pool = WorkerPool(threads: threads, label: label)
        let timers = TimerService(scheduler: SerialQueue(label: "\(label)-timers", pool: pool), tick: tick)
        self.init(pool: pool, timers: timers, label: label)
    }

    /// Starts an executor with its own pool of `threads` threads whose delayed jobs wait on
    /// `timers` (a `VirtualScheduler`'s service in tests: sleeps then end when the test advances).
    ///
    /// - Precondition: `threads` ≥ 1 (otherwise this traps, as `WorkerPool` does).
    public convenience init(
        threads: Int = WorkerPool.defaultThreadCount, label: String = "WheelExecutor", timers: TimerService
    ) {
        self.init(pool: WorkerPool(threads: threads, label: label), timers: timers, label: label)
    }

    private init(pool: WorkerPool, timers: TimerService, label: String) {
        self.pool = pool
        self.timers = timers
        self.label = label
        // Before any task can prefer this executor: its jobs run as this executor from the start.
        pool.handOverTaskJobs(to: self.asUnownedTaskExecutor(), ownerDescription: self.description)
    }

    /// Runs `job` on one of the pool's threads, as soon as one is free.
    public func enqueue(_ job: consuming ExecutorJob) {
        self.pool.enqueueHandedOverJob(UnownedJob(job))
    }

    /// Stops the timer service, then shuts the pool down (see `WorkerPool.shutdown(_:)`).
    ///
    /// - Precondition: no task that prefers the executor is still running or sleeping.
    public func shutdown() {
        self.timers.stop()
        self.pool.shutdown()
    }

    /// `WheelTaskExecutor("label", threads: n)`.
    public var description: String { "WheelTaskExecutor(\"\(self.label)\", threads: \(self.pool.threads))" }
}
