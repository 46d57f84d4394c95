import SerialCore
import Synchronization

/// Runs operations with a timeout: each task ends with exactly one `TimeoutOutcome` — its
/// result, or `.timedOut` — never both, even when the result races the deadline.
///
/// ```swift
/// let callbacks = SerialQueue(label: "callbacks")
/// let manager = TimeoutManager<String>(scheduler: callbacks, workerCount: 2)
/// try manager.run(taskKey: "host-1", timeout: .milliseconds(500)) {
///     try fetchStatus("host-1")                 // blocking; runs on a worker queue
/// } completion: { outcome in
///     print(outcome)                            // on `callbacks`: completed(...) or timedOut
/// }
/// ```
///
/// **Operations.** A blocking operation (`run`) runs on one of a small pool of worker
/// schedulers (by default `SerialQueue`s owned by the manager), chosen round-robin. A
/// completion-based operation (`start`) is called on the caller's thread and reports through
/// a `TimeoutCompletion`. An operation whose task has already ended (timed out while waiting
/// for its worker, or shut down) is not started at all, and counted in `skippedOperationCount`.
/// A blocking operation cannot be interrupted: after its timeout it keeps its worker busy
/// until it returns, and its result is then dropped.
///
/// **Exactly one outcome.** The result and the deadline race for one lock; whichever comes
/// first ends the task, and the other is dropped. Results that lose are counted in
/// `lateResultCount`. Completions run on the manager's scheduler.
///
/// **Keys.** A task may carry a `taskKey`. While a task with that key is in flight, another
/// call with the same key *joins* it: its operation is not run, its timeout is not used, and
/// its completion gets the running task's outcome, after the first caller's (in join order,
/// in the same scheduler turn). Once the task has ended, the key is free again. Joining
/// rather than rejecting means a duplicate request costs nothing and no callback is lost.
///
/// **Lifetime.** A task's deadline timer keeps the manager alive until the task ends.
/// `shutdown()` ends every task in flight with `.cancelled`.
///
/// **Failure.** When the manager's scheduler stops for good, every task in flight ends with
/// `.schedulerShutDown(reason)`, once, and later `run`/`start` calls throw
/// `.schedulerShutDown`. The manager learns of it through `Scheduling.whenShutDown` — the
/// completions then run on the scheduler's worker, as its last act — or when a delivery or a
/// deadline is refused — the completions then run on the thread that was refused (a
/// reporting thread, or the caller of `run`/`start`). A worker scheduler that refuses a
/// blocking operation ends that task with `.schedulerShutDown` naming the worker, delivered
/// on the manager's scheduler as usual. If `shutdown()` finds the scheduler gone, its
/// `.cancelled` completions run on the caller's thread.
public final class TimeoutManager<Value: Sendable>: Sendable {
    /// Where completions (and the deadline timers) run.
    public let scheduler: any Scheduling
    /// The most tasks that may be in flight at once.
    public let maximumInFlight: Int
    let timers: TimerService
    let workers: [any Scheduling]
    let nextWorker = Atomic<Int>(0)
    let state = LockedValue(State())
    /// The scheduler's `whenShutDown` registration; withdrawn by `shutdown()` and at deinit.
    let subscription: ShutdownSubscription

    /// Creates a manager whose blocking operations run on `workerCount` new `SerialQueue`s
    /// labelled `label-0`, `label-1`, …
    ///
    /// - Parameters:
    ///   - scheduler: where completions and deadline timers run.
    ///   - workerCount: how many worker queues run blocking operations (each runs one at a time).
    ///   - label: the prefix of the worker queues' labels (and thread names).
    ///   - tick: the resolution of deadlines; a timeout fires at most one tick late.
    ///   - maximumInFlight: beyond this many tasks in flight, `run`/`start` throw `.tooManyInFlight`.
    /// - Precondition: `workerCount >= 1`.
    public convenience init(
        scheduler: any Scheduling,
        workerCount: Int = 2,
        label: String = "timeouts",
        tick: Duration = .milliseconds(1),
        maximumInFlight: Int = Int.max
    ) {
        Self.validate(workerCount: workerCount, tick: tick, maximumInFlight: maximumInFlight)
        let queues = (0..<workerCount).map { SerialQueue(label: "\(label)-\($0)") }
        self.init(scheduler: scheduler, workers: queues, tick: tick, maximumInFlight: maximumInFlight)
    }

    /// Creates a manager as `init(scheduler:workerCount:label:tick:maximumInFlight:)` does,
    /// but reports a worker queue that cannot be created (no thread available) instead of
    /// trapping; the queues created before the failure are shut down.
    ///
    /// - Throws: `.workerCreationFailed` with the queue's error.
    /// - Precondition: as the initializer's: misuse still traps.
    public static func make(
        scheduler: any Scheduling,
        workerCount: Int = 2,
        label: String = "timeouts",
        tick: Duration = .milliseconds(1),
        maximumInFlight: Int = Int.max
    ) throws(TimeoutManagerError) -> TimeoutManager {
        Self.validate(workerCount: workerCount, tick: tick, maximumInFlight: maximumInFlight)
        var queues: [SerialQueue] = []
        for index in 0..<workerCount {
            do {
                queues.append(try Self.makeWorker(label: "\(label)-\(index)"))
            } catch {
                for queue in queues { queue.shutdown(.cancelPending) }
                throw .workerCreationFailed(error)
            }
        }
        return TimeoutManager(scheduler: scheduler, workers: queues, tick: tick, maximumInFlight: maximumInFlight)
    }

    /// One worker queue for `make`.
    static func makeWorker(label: String) throws(SerialQueueError) -> SerialQueue {
        try SerialQueue.make(label: label)
    }

    /// Checks the whole configuration before anything is created, naming this initializer.
    private static func validate(workerCount: Int, tick: Duration, maximumInFlight: Int) {
        if workerCount < 1 { TimersMisuse.invalidWorkerCount(workerCount) }
        if tick.saturatingNanoseconds < 1 { TimersMisuse.invalidTimeoutTick(tick) }
        if maximumInFlight < 1 { TimersMisuse.invalidMaximumInFlight(maximumInFlight) }
    }

    /// Creates a manager whose blocking operations run on `workers` (for tests: a
    /// `VirtualScheduler`, so operations run when the test advances time).
    ///
    /// - Precondition: `workers` is not empty, `maximumInFlight >= 1`, `tick` at least one nanosecond.
    public init(
        scheduler: any Scheduling,
        workers: [any Scheduling],
        tick: Duration = .milliseconds(1),
        maximumInFlight: Int = Int.max
    ) {
        if workers.isEmpty { TimersMisuse.noWorkers() }
        if tick.saturatingNanoseconds < 1 { TimersMisuse.invalidTimeoutTick(tick) }
        if maximumInFlight < 1 { TimersMisuse.invalidMaximumInFlight(maximumInFlight) }
        self.scheduler = scheduler
        self.workers = workers
        self.maximumInFlight = maximumInFlight
        // No limit here: the manager enforces its own, and a timer of a task that just ended
        // may still count as pending for a moment.
        self.timers = TimerService(scheduler: scheduler, tick: tick)
        // Captures the state, not the manager: a registered handler does not keep it alive.
        let state = self.state
        self.subscription = scheduler.whenShutDown { error in Self.endAll(state, because: error) }
    }

    deinit {
        self.subscription.cancel()
    }

    /// Runs the blocking `operation` on a worker with a deadline `timeout` from now, and calls
    /// `completion` on the scheduler with its one outcome.
    ///
    /// - Parameters:
    ///   - taskKey: joins a task in flight with the same key instead of starting one.
    ///   - timeout: how long the result may take; zero or more.
    ///   - operation: the blocking work, run on a worker; its result or error is the outcome.
    ///   - completion: called once, on the scheduler, with the outcome.
    /// - Returns: Whether the task was started or joined.
    /// - Throws: `.shutDown` after `shutdown()`; `.schedulerShutDown` once the scheduler is
    ///   gone; `.tooManyInFlight` at `maximumInFlight`. When it throws, `completion` is never
    ///   called. (A scheduler found gone while arming this task's deadline does not throw: the
    ///   task, like every other, ends `.schedulerShutDown` on this thread.)
    /// - Precondition: `timeout` is not negative.
    @discardableResult
    public func run(
        taskKey: String? = nil,
        timeout: Duration,
        operation: @escaping @Sendable () throws -> Value,
        completion: @escaping @Sendable (TimeoutOutcome<Value>) -> Void
    ) throws(TimeoutManagerError) -> TimeoutStart {
        let id: UInt64
        switch try self.begin(key: taskKey, timeout: timeout, completion: completion) {
        case .started(let started): id = started
        case .joined: return .joined
        case .ended: return .started
        }
        let index = self.nextWorker.wrappingAdd(1, ordering: .relaxed).oldValue
        let worker = self.workers[Int(UInt(bitPattern: index) % UInt(self.workers.count))]
        do {
            try worker.execute {
                guard self.state.withLock({ $0.shouldStart(id) }) else { return }
                let outcome: TimeoutOutcome<Value>
                do {
                    outcome = .completed(try operation())
                } catch {
                    outcome = .failed(error)
                }
                self.finish(id, with: outcome)
            }
        } catch {
            self.finish(id, with: .schedulerShutDown(error))  // that worker is gone; the manager is not
        }
        return .started
    }

    /// Starts the completion-based `operation` on the caller's thread, with a deadline
    /// `timeout` from now; `completion` gets the one outcome on the scheduler.
    ///
    /// `operation` receives a `TimeoutCompletion` to report its result with, from any thread,
    /// at any time; a report after the deadline is dropped and counted.
    ///
    /// - Returns, Throws, Precondition: as `run(taskKey:timeout:operation:completion:)`.
    @discardableResult
    public func start(
        taskKey: String? = nil,
        timeout: Duration,
        operation: (TimeoutCompletion<Value>) -> Void,
        completion: @escaping @Sendable (TimeoutOutcome<Value>) -> Void
    ) throws(TimeoutManagerError) -> TimeoutStart {
        switch try self.begin(key: taskKey, timeout: timeout, completion: completion) {
        case .started(let id):
            operation(TimeoutCompletion(manager: self, id: id))
            return .started
        case .joined: return .joined
        case .ended: return .started
        }
    }

    /// Runs the blocking `operation` on a worker with a timeout and returns its one outcome
    /// (joining a task in flight with the same key).
    ///
    /// - Throws: as `run(taskKey:timeout:operation:completion:)`.
    public func run(
        taskKey: String? = nil,
        timeout: Duration,
        operation: @escaping @Sendable () throws -> Value
    ) async throws(TimeoutManagerError) -> TimeoutOutcome<Value> {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<TimeoutOutcome<Value>, TimeoutManagerError>, Never>) in
            do throws(TimeoutManagerError) {
                try self.run(taskKey: taskKey, timeout: timeout, operation: operation) { outcome in
                    continuation.resume(returning: .success(outcome))
                }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try result.get()
    }

    /// Tasks started and not yet ended.
    public var inFlightCount: Int { self.state.withLock { $0.tasks.count } }

    /// Results that arrived after their task had ended (timed out, shut down, or reported
    /// twice), and were dropped.
    public var lateResultCount: Int { self.state.withLock { $0.lateResults } }

    /// Blocking operations never started because their task ended while they waited for a worker.
    public var skippedOperationCount: Int { self.state.withLock { $0.skippedOperations } }

    /// Ends every task in flight with `.cancelled` (completions run on the scheduler, or on
    /// the caller's thread if the scheduler is gone) and refuses new tasks with `.shutDown`. Blocking operations already running are not
    /// interrupted; their results are dropped. Calling it again does nothing.
    ///
    /// - Returns: How many tasks were cancelled.
    @discardableResult
    public func shutdown() -> Int {
        let entries = self.state.withLock { $0.shutDown() }
        self.timers.stop()
        if !entries.isEmpty {
            self.post(Delivery(entries: entries, outcome: .cancelled, keepsOutcome: true))
        }
        self.withdrawIfIdle()
        return entries.count
    }

    // MARK: - Internals

    /// Registers the task (or joins one) and arms its deadline.
    private func begin(
        key: String?, timeout: Duration, completion: @escaping Completion
    ) throws(TimeoutManagerError) -> Begin {
        if timeout < .zero { TimersMisuse.negativeTimeout(timeout) }
        let maximum = self.maximumInFlight
        // The lock rethrows untyped errors: carry the typed one out in a Result.
        let begin = try self.state.withLock { state in
            Result { () throws(TimeoutManagerError) in
                try state.begin(key: key, completion: completion, maximumInFlight: maximum)
            }
        }.get()
        guard case .started(let id) = begin else { return begin }
        do {
            // Holds the manager strongly: a pending deadline keeps it alive until the task ends.
            let timer = try self.timers.schedule(after: timeout) { self.finish(id, with: .timedOut) }
            if !self.state.withLock({ $0.attach(timer, to: id) }) { timer.cancel() }
        } catch .schedulerShutDown(let error) {
            // Found the scheduler gone before its handler ran: end every task here, this one included.
            self.schedulerGone(error)
            return .ended
        } catch {
            // `.stopped`: a shutdown() racing this call already cancelled the task.
        }
        return begin
    }

    /// The scheduler refused: every task still in flight ends on this thread, as the
    /// shutdown handler would end it.
    private func schedulerGone(_ error: SchedulingError) {
        self.timers.stop()
        Self.endAll(self.state, because: error)
    }

    /// Ends everything left once the scheduler is gone: deliveries it dropped or refused
    /// first (decided first), then every task in flight with `.schedulerShutDown`.
    private static func endAll(_ state: LockedValue<State>, because error: SchedulingError) {
        let (deliveries, entries) = state.withLock { state in
            (state.takeAllDeliveriesForSchedulerShutdown(), state.shutDown(because: error))
        }
        for delivery in deliveries { Self.deliver(delivery.entries, delivery.outcome(whenShutDownBy: error)) }
        Self.deliver(entries, .schedulerShutDown(error))
    }

    /// Delivers a decided outcome on the scheduler. It stays in the state until it runs, so a
    /// scheduler that drops it (or refuses it) still leads to exactly one delivery.
    private func post(_ delivery: Delivery) {
        let token = self.state.withLock { $0.addDelivery(delivery) }
        do throws(SchedulingError) {
            try self.scheduler.execute {
                guard let delivery = self.state.withLock({ $0.deliveries.removeValue(forKey: token) }) else { return }
                Self.deliver(delivery.entries, delivery.outcome)
                self.withdrawIfIdle()
            }
        } catch {
            self.schedulerGone(error)
        }
    }

    /// Withdraws the shutdown handler once `shutdown()` left nothing for it to do.
    private func withdrawIfIdle() {
        if self.state.withLock({ $0.isIdleAfterShutdown }) { self.subscription.cancel() }
    }

    /// Calls every completion of `entries` (each task's first caller, then its joiners) with `outcome`.
    private static func deliver(_ entries: [Entry], _ outcome: TimeoutOutcome<Value>) {
        for entry in entries {
            for completion in entry.completions { completion(outcome) }
        }
    }

    /// Moves task `id`'s deadline; `false` when it ended or its deadline already fired.
    func reschedule(_ id: UInt64, after timeout: Duration) -> Bool {
        if timeout < .zero { TimersMisuse.negativeTimeout(timeout) }
        guard let timer = self.state.withLock({ $0.tasks[id]?.timer }) else { return false }
        return timer.reschedule(after: timeout) == .movedToNewDeadline
    }

    /// Ends task `id` with `outcome` if it is still in flight; `false` if it had already ended.
    @discardableResult
    func finish(_ id: UInt64, with outcome: TimeoutOutcome<Value>) -> Bool {
        let isTimeout = outcome.isTimedOut
        let isResult: Bool
        switch outcome {
        case .completed, .failed: isResult = true
        case .timedOut, .cancelled, .schedulerShutDown: isResult = false
        }
        guard let entry = self.state.withLock({ $0.finish(id, isResult: isResult, kind: OutcomeKind(outcome)) }) else { return false }
        if isTimeout {
            // Decided on the scheduler, in the timer's turn: deliver right here.
            Self.deliver([entry], outcome)
        } else {
            entry.timer?.cancel()
            self.post(Delivery(entries: [entry], outcome: outcome, keepsOutcome: false))
        }
        return true
    }
}
