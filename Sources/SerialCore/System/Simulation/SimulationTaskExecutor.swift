#if SERIAL_SIMULATION
@_spi(ExperimentalScheduling) import _Concurrency
import Glibc

/// The task executor of an async simulation run: its jobs run on the run's `WorkerPool` (whose
/// task jobs it takes over, as `WheelTaskExecutor` does), and its delayed jobs wait on the run's
/// virtual time.
///
/// **Why a scheduling executor.** On Swift 6.3, `Task.sleep` does not reach the runtime's
/// delayed-enqueue hooks: it gives its wake-up job to `Task.currentSchedulingExecutor`, which is
/// the task executor the job runs on when that executor schedules (this one: every job of the
/// run runs on the pool as this executor), else the default executor (`SimulationDefaultExecutor`). So
/// every sleep of every task on the run's threads comes here, whether the task prefers this
/// executor or was routed to the pool by the global hook. This uses the toolchain's executor
/// SPI (`SchedulingExecutor`), only in simulation builds.
///
/// **Time.** A sleep for a duration waits exactly that long in virtual time. A sleep until an
/// instant of `ContinuousClock` or `SuspendingClock` (what `Task.sleep(for:)` does: it adds the
/// duration to the real `now`) waits for the instant minus the real `now` read here, rounded up
/// to three significant digits and at least to 1 ms (`rounded`), so that the real time between
/// the two reads does not change the virtual deadline. A clock whose duration is not `Swift.Duration` is not
/// supported (its sleep ends the run at once as a failed check).
final class SimulationTaskExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {  // lets only
    let pool: WorkerPool
    /// Where delayed jobs wait (a queue of the pool: its timed waits are the run's virtual time).
    let sleeps: SerialQueue

    /// Real time between computing a deadline and reaching the executor is absorbed up to this.
    static let quantumNanoseconds: Int64 = 1_000_000

    init(pool: WorkerPool) {
        self.pool = pool
        self.sleeps = SerialQueue(label: "sim-sleeps", pool: pool)
        pool.handOverTaskJobs(to: self.asUnownedTaskExecutor(), ownerDescription: "a simulation run's task executor")
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        RuntimeCallback.run { self.pool.enqueueHandedOverJob(job) }
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        let job = UnownedJob(job)
        guard let delay = delay as? Duration else { return self.unsupported(job, clock: clock) }
        RuntimeCallback.run { self.enqueue(job, after: delay) }
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        let job = UnownedJob(job)
        guard let delay = clock.now.duration(to: instant) as? Duration else { return self.unsupported(job, clock: clock) }
        RuntimeCallback.run { self.enqueue(job, after: Self.rounded(delay)) }
    }

    /// `delay` rounded up to three significant digits, and to at least a whole `quantumNanoseconds`:
    /// the real time between the two reads of the clock (microseconds, more when the kernel
    /// preempts the thread) vanishes unless it exceeds the rounding (1 ms for sleeps under a
    /// second, a thousandth of the sleep above).
    static func rounded(_ delay: Duration) -> Duration {
        // Saturating: "sleep until cancelled" idioms ask for centuries (`.max` nanoseconds).
        let nanoseconds = delay.saturatingNanoseconds
        guard nanoseconds > 0 else { return .zero }
        var quantum = Self.quantumNanoseconds
        while nanoseconds / quantum >= 1_000 && quantum <= Int64.max / 10 { quantum *= 10 }
        let (up, overflow) = nanoseconds.addingReportingOverflow(quantum - 1)
        return overflow ? .nanoseconds(Int64.max) : .nanoseconds(up / quantum * quantum)
    }

    /// Runs `job` on the pool once `delay` of virtual time has passed (at once for none).
    func enqueue(_ job: UnownedJob, after delay: Duration) {
        guard delay > .zero else { return self.pool.enqueueHandedOverJob(job) }
        let pool = self.pool
        _ = self.sleeps.asyncAfter(delay: delay) { pool.enqueueHandedOverJob(job) }
    }

    private func unsupported<C: Clock>(_ job: UnownedJob, clock: C) {
        _ = SimulationRun.recordCheckFailure(
            "a sleep on \(C.self), whose duration is not Swift.Duration: the simulator cannot put it on virtual time")
        self.pool.enqueueHandedOverJob(job)
    }
}
#endif
