import SerialCore

/// Queries a long-running job until it is done: never two queries in flight, no stale
/// response applied, no idle gap, backoff after errors, timeouts, and exactly one outcome.
///
/// ```swift
/// let queue = SerialQueue(label: "poll")
/// let poller = Poller<JobStatus>(
///     policy: PollPolicy(interval: .milliseconds(500), attemptTimeout: .seconds(2), deadline: .seconds(60)),
///     scheduler: queue,
///     isDone: { $0.percent == 100 },
///     changes: .equality,
///     query: .completion { attempt, reply in
///         client.fetchStatus(jobID) { result in reply(result) }   // any thread, any time
///     })
/// for try await status in poller.updates { print("\(status.percent)%") }
/// ```
///
/// **Cadence.** The first query starts at `start` (or one interval later, see
/// `PollPolicy.startsImmediately`). Each next query starts at
/// `max(previous start + interval, previous response)`: the interval is kept while responses
/// are quick, and a slow response is followed at once by the next query, with no idle gap.
/// ("Start" is when the query really started: a timer's wake-up latency delays later queries
/// too, so starts are never closer than `interval` — the cadence may drift by that latency,
/// but a server is never asked twice within one interval.)
/// After an error the next start is also at least `response + delay`, the delay being
/// exponential backoff with full jitter between `backoff.minimumDelay` and
/// `backoff.maximumDelay`, or the error's `PollRetryHint.retryAfter` clamped to those bounds.
/// A success resets the error count; `maximumConsecutiveErrors` errors in a row end the poll
/// with `failed(lastError)`.
///
/// **Attempts.** Never two queries in flight: a query starts only after its predecessor was
/// answered or abandoned (attempt timeout, deadline, cancel). Each attempt carries a sequence
/// number and its session's epoch; a response for any attempt but the one in flight (late,
/// duplicated, from a timed-out, superseded or cancelled attempt, or from an earlier session)
/// is dropped. Only the first call of an attempt's completion counts. An async query's task is
/// cancelled when its attempt is abandoned.
///
/// **Timeouts.** An attempt times out after `attemptTimeout`, clamped so it never runs past
/// the overall `deadline`; a query that would start at or after the deadline is not started
/// and the poll ends with `timedOut` at once.
///
/// **Updates.** A successful response is reported when it differs from the last reported
/// value (by the `PollChangeDetection` rule) and its `progress`, if measured, does not go back. A done value
/// is reported too (when it changed), just before `completed`.
///
/// **Threads.** The query is invoked on `scheduler`; its completion may be called on any
/// thread. Update and outcome callbacks run on `scheduler`, one at a time, in the order they
/// were decided; a session's outcome is its last callback. Timers (next query, attempt
/// timeout) are the scheduler's `schedule(at:)` work; at most one is armed at a time, and it
/// is cancelled as soon as it is no longer needed. `isDone`, the change rule and `progress`
/// run outside the poller's lock, on the thread that delivered the response.
///
/// **Lifetime.** A running session keeps the poller alive (its timer and its query's
/// completion refer to it) until its outcome; `cancel()` ends it early.
///
/// **Scheduler shutdown.** When `scheduler` stops for good (its `SerialQueue` shut down or
/// released), the running session ends with its one outcome, `schedulerShutDown(reason)`,
/// after the updates decided before it; an
/// outcome already decided but not yet delivered is still delivered; a later `start` ends its
/// session the same way at once. Nothing traps. Those deliveries run on the thread that learnt
/// of the shutdown, since the scheduler runs nothing more: on a `SerialQueue`, its worker as its
/// last act (inside `shutdown()`); otherwise the thread whose call the scheduler refused (a
/// `start`, a `cancel`, a query's reply). The poller's shutdown handler on `scheduler` holds its
/// state, not the poller; it is withdrawn when the poller is released with nothing running.
///
/// - Invariant: each session (each `start`) ends with exactly one `PollOutcome`, delivered
///   once, after all of its updates — whatever the race between responses, timers and `cancel`.
public final class Poller<Value: Sendable>: Sendable {
    /// The pacing this poller was created with.
    public let policy: PollPolicy
    /// Where queries are started, timers run and callbacks are delivered.
    public let scheduler: any Scheduling

    let query: PollQuery<Value>
    let isDone: @Sendable (Value) -> Bool
    let changes: PollChangeDetection<Value>
    let progress: (@Sendable (Value) -> Double)?
    let state: LockedValue<State>

    /// Creates a poller; no query runs before `start` (or iterating `updates`).
    ///
    /// One initializer serves every kind of query and value: the query's form is a
    /// `PollQuery` value (`.completion { attempt, reply in … }` or `.async { … }`), and what
    /// counts as a change is a `PollChangeDetection` (`.equality` for `Equatable` values,
    /// `.isSame { … }` for others, `.everyResponse`). Both are required arguments, so a call
    /// says how it asks and what it reports.
    ///
    /// - Parameters:
    ///   - policy: the cadence, backoff and timeouts; traps if it cannot work (see `PollPolicy`).
    ///   - scheduler: a `SerialQueue` in production, a `VirtualScheduler` in tests.
    ///   - random: the source of backoff jitter (inject a seeded one for repeatable tests).
    ///   - isDone: whether a value means the job is finished.
    ///   - changes: which successful responses are updates (see `PollChangeDetection`).
    ///   - progress: an optional measure that should only grow; a response whose measure is
    ///     below the last reported one is not reported (it still counts as a success).
    ///   - query: how one attempt asks for the job's state (see `PollQuery`).
    public init(
        policy: PollPolicy,
        scheduler: any Scheduling,
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        isDone: @escaping @Sendable (Value) -> Bool,
        changes: PollChangeDetection<Value>,
        progress: (@Sendable (Value) -> Double)? = nil,
        query: PollQuery<Value>
    ) {
        policy.validate()
        self.policy = policy
        self.scheduler = scheduler
        self.query = query
        self.isDone = isDone
        self.changes = changes
        self.progress = progress
        self.state = LockedValue(State(policy: policy, random: random))
        // Holds the state only (a released poller's running session still gets its outcome).
        // Runs at once when the scheduler has already stopped.
        let state = self.state
        let subscription = scheduler.whenShutDown { reason in
            Poller.schedulerDidShutDown(reason, state: state, holdingClaim: false, afterLastWork: true)
        }
        self.state.withLock { $0.shutdownSubscription = subscription }
    }

    deinit {
        // Released while a session runs (its timer was dropped by a stopping scheduler): the
        // handler stays, to end that session when the shutdown completes.
        let idle = self.state.withLock { state -> ShutdownSubscription? in
            state.isQuiet ? state.shutdownSubscription : nil
        }
        idle?.cancel()
    }

    // MARK: Control

    /// Starts a poll session: the first query starts on `scheduler` at once (or one interval
    /// later), then queries follow the policy until the session's one outcome.
    ///
    /// `onUpdate` and `onOutcome` run on `scheduler`, one at a time, in order; `onOutcome`
    /// runs exactly once, after the session's last update. A poller may be started again
    /// after its outcome was decided (even from `onOutcome`); the new session has a new epoch,
    /// fresh change detection and error count, and ignores every response of the old one.
    ///
    /// Once the scheduler has stopped for good, the session ends at once with
    /// `schedulerShutDown(reason)`, delivered on the calling thread before this returns; no
    /// query runs.
    ///
    /// - Returns: the session's number (its epoch), as in `PollAttempt.session`.
    /// - Complexity: O(1); the query itself is not run on the caller's thread.
    /// - Precondition: No session is running (`isRunning` is `false`); that traps.
    @discardableResult
    public func start(
        onUpdate: @escaping @Sendable (Value) -> Void = { _ in },
        onOutcome: @escaping @Sendable (PollOutcome<Value>) -> Void = { _ in }
    ) -> UInt64 {
        let now = self.scheduler.now
        let handlers = Handlers(onUpdate: onUpdate, onOutcome: onOutcome)
        let (session, effects) = self.state.withLock { state in
            let effects = state.start(now: now, handlers: handlers)
            return (state.epoch, effects)
        }
        self.perform(effects)
        return session
    }

    /// Ends the running session with `cancelled`, unless its outcome was already decided.
    ///
    /// Whatever races it (a response arriving, a timer firing on another thread), the session
    /// still has exactly one outcome: `true` means it is `cancelled`; `false` means another
    /// outcome won, or nothing was running. The in-flight query's response, if any, is
    /// ignored; an async query's task is cancelled; the armed timer is cancelled.
    ///
    /// - Complexity: O(1). Safe from any thread, including from callbacks.
    @discardableResult
    public func cancel() -> Bool {
        self.cancel(session: nil)
    }

    /// `cancel()`, limited to session `session` (so a stale canceller cannot end a newer session).
    @discardableResult
    func cancel(session: UInt64?) -> Bool {
        let (cancelled, effects) = self.state.withLock { $0.cancel(session: session) }
        self.perform(effects)
        return cancelled
    }

    /// Whether a session is running (started, outcome not yet decided).
    public var isRunning: Bool { self.state.withLock { $0.isRunning } }

    /// The latest session's outcome once decided (it may not have been delivered yet), or
    /// `nil` while running or before the first `start`.
    public var outcome: PollOutcome<Value>? { self.state.withLock { $0.outcome } }

    // MARK: Events

    private func nextQueryFired(_ ticket: Ticket) {
        let now = self.scheduler.now
        self.perform(self.state.withLock { $0.nextQueryFired(ticket, now: now) })
    }

    private func attemptTimeoutFired(_ ticket: Ticket) {
        let now = self.scheduler.now
        self.perform(self.state.withLock { $0.attemptTimeoutFired(ticket, now: now) })
    }

    /// Takes a response for `ticket` from any thread. The user's `isDone`, change rule and
    /// `progress` run here, between two short critical sections.
    private func receive(_ result: Result<Value, any Error>, for ticket: Ticket) {
        let now = self.scheduler.now
        guard let context = self.state.withLock({ $0.responseContext(for: ticket) }) else { return }
        let digest: Digest
        switch result {
        case .success(let value):
            let isChanged = self.changes.isChange(value, from: context.lastReported)
            digest = .success(value, isDone: self.isDone(value), isChanged: isChanged, progress: self.progress?(value))
        case .failure(let error):
            digest = .failure(error, hint: (error as? any PollRetryHint)?.retryAfter)
        }
        self.perform(self.state.withLock { $0.receive(digest, for: ticket, now: now) })
    }

    // MARK: Effects

    private func perform(_ effects: Effects) {
        effects.cancelTimer?.cancel()
        effects.cancelTask?.cancel()
        var refused = false
        if let arm = effects.arm {
            let ticket = arm.ticket
            do {
                let handle: DelayedWork
                switch arm.kind {
                case .nextQuery:
                    handle = try self.scheduler.schedule(at: arm.at) { self.nextQueryFired(ticket) }
                case .attemptTimeout:
                    handle = try self.scheduler.schedule(at: arm.at) { self.attemptTimeoutFired(ticket) }
                }
                if !self.state.withLock({ $0.attach(timer: handle, kind: arm.kind, to: ticket) }) {
                    handle.cancel()
                }
            } catch {
                // The session has ended with the shutdown: its query does not start.
                refused = true
                Poller.schedulerDidShutDown(error, state: self.state, holdingClaim: false, afterLastWork: false)
            }
        }
        if effects.scheduleDrain {
            do {
                try self.scheduler.execute { Poller.deliver(self.state) }
            } catch {
                Poller.schedulerDidShutDown(error, state: self.state, holdingClaim: true, afterLastWork: false)
            }
        }
        if !refused, let start = effects.startQuery {
            WorkContext.run(start.context) { self.runQuery(start.attempt, ticket: start.ticket) }
        }
    }

    /// The scheduler stopped for good: ends the running session, and delivers here what the
    /// scheduler no longer will (see `State.schedulerShutDown`).
    private static func schedulerDidShutDown(
        _ reason: SchedulingError, state: LockedValue<State>, holdingClaim: Bool, afterLastWork: Bool
    ) {
        let (effects, deliverHere) = state.withLock {
            $0.schedulerShutDown(reason, holdingClaim: holdingClaim, afterLastWork: afterLastWork)
        }
        effects.cancelTimer?.cancel()
        effects.cancelTask?.cancel()
        if deliverHere { Poller.deliver(state) }
    }

    private func runQuery(_ attempt: PollAttempt, ticket: Ticket) {
        switch self.query.form {
        case .completion(let query):
            query(attempt) { result in self.receive(result, for: ticket) }
        case .async(let query):
            let task = Task {
                let result: Result<Value, any Error>
                do {
                    result = .success(try await query())
                } catch {
                    result = .failure(error)
                }
                self.receive(result, for: ticket)
            }
            if !self.state.withLock({ $0.attach(task: task, to: ticket) }) {
                task.cancel()
            }
        }
    }

    /// Delivers decided events in order, outside the lock: on the scheduler, or on the thread
    /// that found it stopped.
    private static func deliver(_ state: LockedValue<State>) {
        while true {
            let batch = state.withLock { $0.takeDeliveries() }
            if batch.isEmpty { return }
            for delivery in batch {
                switch delivery {
                case .update(let value, let handlers): WorkContext.run(handlers.context) { handlers.onUpdate(value) }
                case .outcome(let outcome, let handlers): WorkContext.run(handlers.context) { handlers.onOutcome(outcome) }
                }
            }
        }
    }
}
