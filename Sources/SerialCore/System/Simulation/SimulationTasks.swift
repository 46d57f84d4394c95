#if SERIAL_SIMULATION
import Glibc
import Synchronization

/// The Swift tasks of one async simulation run: where their jobs run, and what the run knows of
/// each task for its reports.
///
/// **Routing.** The scenario's task prefers the run's `SimulationTaskExecutor`, on a `WorkerPool`
/// of the run (its structured children and the default actors it calls inherit that); every job
/// the runtime gives the global executor meanwhile comes through `SimulationTaskHooks` to `route`:
/// from a thread of the run it goes to the same pool. Sleeps reach the executor (see there) and
/// wait on a pooled queue's `asyncAfter`, on the run's virtual time. So every job runs on a
/// simulated thread, at a point the scheduler chose.
///
/// **Escapes.** A job of one of the run's tasks enqueued from a thread outside the run (a
/// continuation resumed from a thread of your own, say) would run where the scheduler cannot
/// see it: it ends the run (`escaped job`) and is never run. Jobs of tasks the run never saw
/// (other tests' tasks in the same process) go to the global executor as usual.
///
/// **Tasks.** A task is seen when its job is enqueued from, or runs on, a thread of the run. The
/// runtime does not say whether a task whose job returned has finished or is suspended: a task
/// whose reference count dropped during its job finished (it released the reference it holds on
/// itself); measured on Swift 6.3.1, that shows for a task nobody holds a handle to, not for one
/// whose `Task` value is kept or awaited. So a deadlock report lists every task not seen to
/// finish, and a task left suspended after the scenario's task finished goes unreported. (A
/// task whose `CheckedContinuation` was dropped unresumed also shows the drop: the report marks
/// it finished.)
package final class SimulationTasks: @unchecked Sendable {  // mutable state guarded by `kernel.lock`
    /// The run whose jobs the hooks route (one run at a time per process).
    static let active = Mutex<SimulationTasks?>(nil)

    let kernel: SimulationKernel
    /// The scenario's task prefers it; every job of the run runs as it, on its pool.
    let executor: SimulationTaskExecutor

    private var tasks: [UInt64: TaskRecord] = [:]
    private var rootID: UInt64 = 0
    private var scenarioFinished = false

    struct TaskRecord {
        /// 1 for the first task the run saw, in the order the schedule showed them.
        let number: Int
        /// Who started it: "task 2 on T3 at step 40".
        let origin: String
        var state: State = .new
        var lastRun = ""

        /// `returned`: a job of it ran and returned, and the run could not tell whether the task
        /// finished (see the type's comment).
        enum State { case new, running, returned, finished }
    }

    private init(kernel: SimulationKernel, executor: SimulationTaskExecutor) {
        self.kernel = kernel
        self.executor = executor
    }

    // MARK: Running an async scenario

    /// Runs `scenario` as the run's root task on a new pool of `threads` threads, then waits until
    /// nothing in the run can move; by the run's main thread. A root task that has not finished
    /// by then ends the run as a deadlock naming it and every task the run saw.
    package static func runScenario(threads: Int, _ scenario: @escaping @Sendable () async -> Void) {
        guard let me = SimulatedThread.current else {
            fatalError("SerialTesting simulation: an async scenario must start on a simulated thread (internal inconsistency)")
        }
        let pool = WorkerPool(threads: threads, label: "sim-tasks")
        pool.core.neverSpin()  // the run's own machinery: no spin windows in every async run
        let run = SimulationTasks(kernel: me.kernel, executor: SimulationTaskExecutor(pool: pool))
        Self.active.withLock { $0 = run }
        Task(executorPreference: run.executor) {
            run.kernel.enter()
            run.rootID = TaskIdentity.current
            run.kernel.leave()
            await scenario()
            run.kernel.enter()
            run.scenarioFinished = true
            run.kernel.leave()
        }
        me.kernel.waitUntilQuiescent(by: me)
        me.kernel.enter()
        let stranded = run.strandedReport()
        me.kernel.leave()
        if let stranded { me.kernel.fail(.deadlock, stranded, by: me) }
        Self.active.withLock { $0 = nil }
        pool.shutdown()
    }

    /// Clears the routing once a run has ended (by the controlling thread: a failed run's main
    /// thread stays parked before it could).
    package static func endRouting() {
        Self.active.withLock { $0 = nil }
    }

    // MARK: Routing

    /// Takes `job` into the active run (after `delay` nanoseconds of virtual time, if given);
    /// `false` when no run is active or the job is not the run's (the runtime then runs it).
    static func route(_ job: UnownedJob, afterNanoseconds delay: UInt64?) -> Bool {
        guard let run = Self.active.withLock({ $0 }) else { return false }
        return run.take(job, afterNanoseconds: delay)
    }

    /// Whether `job`, enqueued on `pool` by a task that prefers it, comes from a thread outside
    /// the async run that owns `pool`: then the run ends (`escaped job`) and the job never runs.
    static func refuses(_ job: UnownedJob, enqueuedOn pool: PoolCore) -> Bool {
        guard SimulatedThread.current == nil, let run = Self.active.withLock({ $0 }), run.executor.pool.core === pool else {
            return false
        }
        run.kernel.enter()
        run.escaped(TaskIdentity.of(job))
        run.kernel.leave()
        return true
    }

    /// Under the kernel lock: ends the run, a job of task `id` having been enqueued from outside.
    private func escaped(_ id: UInt64) {
        self.kernel.end(.escaped, "a job of \(self.title(of: id)) was enqueued from a thread outside the run "
            + "(a continuation resumed from a thread of your own, or a callback on a library's own thread); "
            + "it would run unseen by the scheduler, so it never runs. Resume continuations from the run's "
            + "threads: a SerialQueue's work, or a task of the run.")
    }

    private func take(_ job: UnownedJob, afterNanoseconds delay: UInt64?) -> Bool {
        let id = TaskIdentity.of(job)
        guard let thread = SimulatedThread.current, thread.kernel === self.kernel else {
            self.kernel.enter()
            let ours = id != 0 && self.tasks[id] != nil
            if ours { self.escaped(id) }
            self.kernel.leave()
            return ours
        }
        if id != 0 {
            self.kernel.enter()
            self.see(id, by: thread)
            self.kernel.mix(delay == nil ? 0x60 : 0x61, thread.id, self.tasks[id]!.number, delay ?? 0)
            self.kernel.leave()
        }
        RuntimeCallback.run { self.executor.enqueue(job, after: .nanoseconds(Int64(clamping: delay ?? 0))) }
        return true
    }

    /// Under the kernel lock: records task `id` the first time the run sees it.
    private func see(_ id: UInt64, by thread: SimulatedThread) {
        guard self.tasks[id] == nil else { return }
        let parent = TaskIdentity.current
        let by = parent == 0 ? "" : (self.tasks[parent].map { "by task \($0.number) " } ?? "by a task ")
        self.tasks[id] = TaskRecord(
            number: self.tasks.count + 1, origin: "started \(by)on \(thread.title) at step \(self.kernel.scheduler.steps)")
    }

    // MARK: Jobs run by the pool

    /// Before a pool thread of the run runs `job`: what `didRun` needs to tell completion
    /// from suspension. `nil` for jobs that are not tasks, and outside async runs.
    static func willRun(_ job: UnownedJob) -> RunningJob? {
        guard let thread = SimulatedThread.current else { return nil }
        guard let run = Self.active.withLock({ $0 }), run.kernel === thread.kernel else { return nil }
        let id = TaskIdentity.of(job)
        guard id != 0 else { return nil }
        // Kept alive by this record until `didRun`, whether the job completes the task or not.
        let task = Unmanaged<AnyObject>.fromOpaque(unsafeBitCast(job, to: UnsafeRawPointer.self)).retain()
        let references = _getRetainCount(task.takeUnretainedValue())
        run.kernel.enter()
        run.see(id, by: thread)
        run.tasks[id]!.state = .running
        run.tasks[id]!.lastRun = "last ran on \(thread.title) at step \(run.kernel.scheduler.steps)"
        run.kernel.leave()
        return RunningJob(run: run, id: id, task: task, references: references)
    }

    package struct RunningJob {
        fileprivate let run: SimulationTasks
        fileprivate let id: UInt64
        fileprivate let task: Unmanaged<AnyObject>
        fileprivate let references: UInt

        /// After the job returned, on the same thread.
        func didRun() {
            // A task drops the reference it holds on itself when it completes.
            let completed = _getRetainCount(self.task.takeUnretainedValue()) < self.references
            self.run.kernel.enter()
            self.run.tasks[self.id]!.state = completed ? .finished : .returned
            self.run.kernel.leave()
            self.task.release()
        }
    }

    // MARK: Reports

    private func title(of id: UInt64) -> String {
        guard let record = self.tasks[id] else { return "a task" }
        return id == self.rootID ? "task \(record.number) (the scenario's)" : "task \(record.number)"
    }

    /// Under the kernel lock, once nothing can move: `nil` when the scenario's task finished;
    /// otherwise the deadlock report naming the scenario's task and every task the run saw.
    private func strandedReport() -> String? {
        guard !self.scenarioFinished else { return nil }
        let seen = self.tasks.sorted { $0.value.number < $1.value.number }
        var lines = [
            "deadlock: the scenario's task never finished; no thread can run and no sleep is left to end "
                + "(step \(self.kernel.scheduler.steps), virtual time +\(self.kernel.elapsedDescription))",
            "  tasks (one not seen to finish is suspended on something no one will do, such as a continuation "
                + "never resumed or a task that never answers, unless it finished unseen; the runtime does not "
                + "say, nor what a task awaits):",
        ]
        for (id, record) in seen {
            let ran = record.state == .new ? "never ran" : record.lastRun
            let state = record.state == .finished ? "finished" : "not seen to finish"
            lines.append("    \(self.title(of: id)): \(state); \(id == self.rootID ? "" : record.origin + ", ")\(ran)")
        }
        lines.append("  threads:")
        lines.append(contentsOf: self.kernel.threadLines().map { "  \($0)" })
        return lines.joined(separator: "\n")
    }
}

#endif
