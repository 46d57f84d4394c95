#if SERIAL_SIMULATION
import Glibc
import Synchronization

/// The Concurrency runtime's global-executor hooks, set only while an async simulation run lasts
/// (`SimulationTasks`): every job the runtime would give the global executor (a `Task {}`, a
/// `Task.detached`, a default actor woken by a task with no executor preference, a continuation
/// resumed for such a task) and every delayed job (`Task.sleep`) goes to the run instead.
///
/// Measured on Swift 6.3.1 (Linux): `Task {}`, `Task.detached`, a default actor woken by a task
/// with no preference and a continuation resumed for one reach `swift_task_enqueueGlobal_hook`;
/// `Task.sleep` reaches neither delayed hook (it goes to `Task.currentSchedulingExecutor`: see
/// `SimulationTaskExecutor`). The delayed hooks stay set for any runtime path that still uses them.
///
/// The hooks are C globals of `libswift_Concurrency` (`swift_task_enqueueGlobal_hook` and the
/// delayed forms), found with `dlsym` as swift-concurrency-extras' `withMainSerialExecutor` does:
/// the runtime calls a hook, when set, instead of its global executor, handing it the original
/// for jobs the hook does not take.
enum SimulationTaskHooks {
    typealias Original = @convention(thin) (UnownedJob) -> Void
    typealias Hook = @convention(thin) (UnownedJob, Original) -> Void
    typealias DelayOriginal = @convention(thin) (UInt64, UnownedJob) -> Void
    typealias DelayHook = @convention(thin) (UInt64, UnownedJob, DelayOriginal) -> Void
    typealias DeadlineOriginal = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob) -> Void
    typealias DeadlineHook = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob, DeadlineOriginal) -> Void

    nonisolated(unsafe) private static let process = dlopen(nil, RTLD_LAZY)
    nonisolated(unsafe) private static let enqueue = Self.variable("swift_task_enqueueGlobal_hook", Hook?.self)
    nonisolated(unsafe) private static let delay = Self.variable("swift_task_enqueueGlobalWithDelay_hook", DelayHook?.self)
    nonisolated(unsafe) private static let deadline = Self.variable("swift_task_enqueueGlobalWithDeadline_hook", DeadlineHook?.self)

    private static func variable<T>(_ name: String, _ type: T.Type) -> UnsafeMutablePointer<T> {
        guard let address = dlsym(Self.process, name) else {
            fatalError("SerialTesting simulation: the Concurrency runtime has no \(name) (async scenarios need it)")
        }
        return address.assumingMemoryBound(to: T.self)
    }

    /// The hooks that were set before `install` (normally none), restored by `uninstall`.
    nonisolated(unsafe) private static var saved: (Hook?, DelayHook?, DeadlineHook?) = (nil, nil, nil)

    /// Sets the hooks (by the controlling thread, before the run's first thread starts).
    static func install() {
        Self.saved = (Self.enqueue.pointee, Self.delay.pointee, Self.deadline.pointee)
        Self.enqueue.pointee = { job, original in
            if !SimulationTasks.route(job, afterNanoseconds: nil) { original(job) }
        }
        Self.delay.pointee = { nanoseconds, job, original in
            if !SimulationTasks.route(job, afterNanoseconds: nanoseconds) { original(nanoseconds, job) }
        }
        Self.deadline.pointee = { seconds, nanoseconds, toleranceSeconds, toleranceNanoseconds, clock, job, original in
            let delay = SimulationTaskHooks.delay(untilSeconds: seconds, nanoseconds: nanoseconds, clock: clock)
            if !SimulationTasks.route(job, afterNanoseconds: delay) {
                original(seconds, nanoseconds, toleranceSeconds, toleranceNanoseconds, clock, job)
            }
        }
    }

    /// Restores the hooks `install` replaced (by the controlling thread, once the run has ended).
    static func uninstall() {
        (Self.enqueue.pointee, Self.delay.pointee, Self.deadline.pointee) = Self.saved
    }

    /// Quantum a deadline's delay is rounded up to: the real time between reading Swift's clock
    /// and reaching the hook (microseconds) is absorbed, so the same sleep gives the same delay.
    static let deadlineQuantumNanoseconds: UInt64 = 1_000_000

    /// The delay until a deadline on Swift's `ContinuousClock` (clock 1, `CLOCK_BOOTTIME`) or
    /// `SuspendingClock` (clock 2, `CLOCK_MONOTONIC`), read now on the real clock (the deadline
    /// was computed from it), rounded up to `deadlineQuantumNanoseconds`.
    static func delay(untilSeconds seconds: Int64, nanoseconds: Int64, clock: Int32) -> UInt64 {
        var now = timespec()
        clock_gettime(clock == 1 ? CLOCK_BOOTTIME : CLOCK_MONOTONIC, &now)
        let deadline = Int128(seconds) * 1_000_000_000 + Int128(nanoseconds)
        let current = Int128(now.tv_sec) * 1_000_000_000 + Int128(now.tv_nsec)
        guard deadline > current else { return 0 }
        let quantum = Int128(Self.deadlineQuantumNanoseconds)
        return UInt64(clamping: (deadline - current + quantum - 1) / quantum * quantum)
    }
}

/// The runtime's id of the task a job belongs to (0 for a job that is not a task, such as an
/// actor's), and of the task running on the calling thread.
@_silgen_name("swift_task_getJobTaskId")
private func _jobTaskID(_ job: UnownedJob) -> UInt64

enum TaskIdentity {
    static func of(_ job: UnownedJob) -> UInt64 { _jobTaskID(job) }

    /// The id of the task running on the calling thread, 0 outside any task.
    static var current: UInt64 {
        // A task is a job: `UnsafeCurrentTask` wraps the pointer to it.
        withUnsafeCurrentTask { task in task.map { _jobTaskID(unsafeBitCast($0, to: UnownedJob.self)) } ?? 0 }
    }
}
#endif
