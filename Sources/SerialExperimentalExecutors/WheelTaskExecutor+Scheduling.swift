@_spi(ExperimentalScheduling) import _Concurrency
import SerialCore
import SerialTimers

/// Delayed jobs (the runtime's `Task.sleep` among them) as timers on the executor's wheel.
///
/// Clocks: `SuspendingClock` instants convert exactly to the service's `MonotonicInstant`s;
/// any other clock whose duration is `Swift.Duration` (`ContinuousClock` included) is read once
/// when the job arrives, and the delay left is added to the service's `now`. A clock with another
/// duration type sleeps on itself in a helper task that then enqueues the job (a fallback: the
/// runtime sends only `ContinuousClock` and `SuspendingClock` sleeps here).
///
/// A job whose timer the service refuses or drops without firing (the service stopped, its
/// scheduler shut down, `maximumPending` reached) goes to the pool at once: its sleep ends early
/// rather than never.
@_spi(ExperimentalScheduling)
extension WheelTaskExecutor: SchedulingExecutor {
    /// Runs `job` on the pool once `instant` on `clock` has passed, within `tolerance` after it
    /// (`nil`: one tick of the service).
    ///
    /// - Complexity: O(1): one wheel timer (O(log p) for a tolerance under a tick, as
    ///   `TimerService` precise timers), two allocations.
    public func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C
    ) {
        let tolerance = tolerance.map { $0 as? Duration } ?? nil
        if let instant = instant as? SuspendingClock.Instant {
            self.schedule(UnownedJob(job), at: MonotonicInstant(instant), tolerance: tolerance)
        } else if let delay = clock.now.duration(to: instant) as? Duration {
            self.schedule(UnownedJob(job), at: self.timers.scheduler.now.advanced(by: delay), tolerance: tolerance)
        } else {
            self.sleepOnOwnClock(UnownedJob(job), until: instant, tolerance: nil, clock: clock)
        }
    }

    /// Runs `job` on the pool once `delay` has passed, within `tolerance` after it (`nil`: one
    /// tick of the service).
    ///
    /// - Complexity: as `enqueue(_:at:tolerance:clock:)`.
    public func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C
    ) {
        guard let delay = delay as? Duration else {
            let deadline = clock.now.advanced(by: delay)
            self.sleepOnOwnClock(UnownedJob(job), until: deadline, tolerance: tolerance, clock: clock)
            return
        }
        let tolerance = tolerance.map { $0 as? Duration } ?? nil
        self.schedule(UnownedJob(job), at: self.timers.scheduler.now.advanced(by: delay), tolerance: tolerance)
    }

    private func schedule(_ job: UnownedJob, at deadline: MonotonicInstant, tolerance: Duration?) {
        let delayed = DelayedJob(job, executor: self)
        // Refused: the closure and `delayed` are released here, which enqueues the job at once.
        _ = try? self.timers.schedule(at: deadline, tolerance: tolerance) { delayed.fire() }
    }

    private func sleepOnOwnClock<C: Clock>(
        _ job: UnownedJob, until instant: C.Instant, tolerance: C.Duration?, clock: C
    ) {
        Task.detached {
            try? await clock.sleep(until: instant, tolerance: tolerance)
            self.pool.enqueueHandedOverJob(job)
        }
    }
}

/// A job waiting on the wheel. Fired, it goes to the pool; released unfired (the service
/// refused or dropped its timer), it goes there at once, so that no sleeping task is stranded.
private final class DelayedJob: @unchecked Sendable {  // `job` is taken once: by `fire` or by `deinit`, never both
    private var job: UnownedJob?
    private let executor: WheelTaskExecutor

    init(_ job: UnownedJob, executor: WheelTaskExecutor) {
        self.job = job
        self.executor = executor
    }

    /// Runs on the timer service's scheduler, once.
    func fire() {
        guard let job = self.job.take() else { return }
        self.executor.pool.enqueueHandedOverJob(job)
    }

    deinit {
        if let job = self.job { self.executor.pool.enqueueHandedOverJob(job) }
    }
}
