import SerialCore

extension Poller {
    /// Names one attempt (or the timer that will start it): the session's epoch and a sequence
    /// number that never repeats within a poller. A response, a timer or a task carrying a
    /// ticket that is not the current one is stale and changes nothing.
    struct Ticket: Hashable, Sendable, CustomStringConvertible {
        let session: UInt64
        let sequence: UInt64

        var description: String { "#\(self.session).\(self.sequence)" }
    }

    /// The callbacks of one session. Every delivery carries the handlers of its own session,
    /// so a session started from an outcome callback never receives its predecessor's events.
    final class Handlers: Sendable {
        let onUpdate: @Sendable (Value) -> Void
        let onOutcome: @Sendable (PollOutcome<Value>) -> Void
        /// The context of the code that started the session: queries and callbacks run with it.
        let context: WorkContext.Captured?

        init(onUpdate: @escaping @Sendable (Value) -> Void, onOutcome: @escaping @Sendable (PollOutcome<Value>) -> Void) {
            self.onUpdate = onUpdate
            self.onOutcome = onOutcome
            self.context = WorkContext.capture()
        }
    }

    /// An event waiting to be delivered on the scheduler, in the order it was decided.
    enum Delivery {
        case update(Value, Handlers)
        case outcome(PollOutcome<Value>, Handlers)
    }

    /// A response, digested outside the lock (user closures never run under it).
    enum Digest {
        case success(Value, isDone: Bool, isChanged: Bool, progress: Double?)
        case failure(any Error, hint: Duration?)
    }

    /// What the first half of taking a response hands out.
    struct ResponseContext {
        let lastReported: Value?
    }

    /// Which timer a handle belongs to.
    enum TimerKind: Sendable {
        case nextQuery
        case attemptTimeout
    }

    /// What the owner must do after unlocking, in this order: cancel, arm, deliver, query.
    struct Effects {
        var cancelTimer: DelayedWork? = nil
        var cancelTask: Task<Void, Never>? = nil
        var arm: (kind: TimerKind, ticket: Ticket, at: MonotonicInstant)? = nil
        var scheduleDrain = false
        var startQuery: (ticket: Ticket, attempt: PollAttempt, context: WorkContext.Captured?)? = nil
    }

    /// The attempt in flight.
    struct Attempt {
        let ticket: Ticket
        let context: PollAttempt
        var timer: DelayedWork? = nil
        var task: Task<Void, Never>? = nil
    }

    /// Where the current session stands.
    enum Phase {
        /// Never started.
        case idle
        /// No query in flight; the next one starts at `at` (its timer, once armed).
        case waiting(ticket: Ticket, at: MonotonicInstant, timer: DelayedWork?)
        /// Exactly one query in flight.
        case querying(Attempt)
        /// The session's one outcome was decided (it may still be on its way to the handlers).
        case finished(PollOutcome<Value>)
    }

    /// A random source behind a concrete type, so generic random APIs accept it.
    struct AnyRandom: RandomNumberGenerator, Sendable {
        var base: any RandomNumberGenerator & Sendable
        mutating func next() -> UInt64 { self.base.next() }
    }

    /// The poller's decisions, as a plain value: every event (start, timer, response, cancel)
    /// is a mutating method that returns the `Effects` its owner performs after unlocking.
    ///
    /// - Invariant: at most one attempt is in flight (`phase` is `.querying` for one ticket);
    ///   `drainScheduled` is `true` whenever `outbox` is not empty; a session has exactly one
    ///   `.outcome` delivery, its last.
    struct State {
        let policy: PollPolicy
        var random: AnyRandom
        private(set) var phase: Phase = .idle
        /// The current session; 0 before the first `start`.
        private(set) var epoch: UInt64 = 0
        private var lastSequence: UInt64 = 0

        // The current session's memory.
        private var handlers: Handlers? = nil
        private var deadline: MonotonicInstant? = nil
        private(set) var attempts = 0
        private(set) var consecutiveErrors = 0
        private var lastReported: Value? = nil
        private var lastProgress: Double? = nil
        /// Whether this session's outcome was decided: the guard of "exactly one outcome".
        private var outcomeDecided = false

        private var outbox: [Delivery] = []
        private var drainScheduled = false
        /// Whether the drain claim is held by a thread delivering outside the scheduler (after
        /// it refused work), rather than by delivery work given to the scheduler.
        private var drainingInline = false
        /// Set once the scheduler stopped for good: every session ends at once with
        /// `schedulerShutDown(reason)`, delivered off the scheduler.
        private(set) var schedulerGone: SchedulingError? = nil
        /// Withdrawn when the poller is released idle.
        var shutdownSubscription: ShutdownSubscription? = nil

        /// Responses ignored because their attempt was no longer the one in flight (all sessions).
        private(set) var droppedResponses = 0
        /// Sessions ended, by outcome kind, and timers that fired (stale ones included), for
        /// `serviceStatistics`; sessions started are `epoch`.
        private(set) var completedSessions = 0
        private(set) var failedSessions = 0
        private(set) var timedOutSessions = 0
        private(set) var cancelledSessions = 0
        private(set) var shutDownSessions = 0
        private(set) var timersFired = 0

        init(policy: PollPolicy, random: any RandomNumberGenerator & Sendable) {
            self.policy = policy
            self.random = AnyRandom(base: random)
        }

        var isRunning: Bool {
            switch self.phase {
            case .waiting, .querying: return true
            case .idle, .finished: return false
            }
        }

        /// Nothing running and nothing left to deliver: the poller needs its scheduler no more.
        var isQuiet: Bool { !self.isRunning && self.outbox.isEmpty && !self.drainScheduled }

        var outcome: PollOutcome<Value>? {
            if case .finished(let outcome) = self.phase { return outcome }
            return nil
        }

        // MARK: Events

        /// Begins a new session (epoch + 1) at `now`.
        mutating func start(now: MonotonicInstant, handlers: Handlers) -> Effects {
            if self.isRunning { PollingMisuse.startWhileRunning(session: self.epoch) }
            self.epoch += 1
            self.handlers = handlers
            self.deadline = self.policy.deadline.map { now.advanced(by: $0) }
            self.attempts = 0
            self.consecutiveErrors = 0
            self.lastReported = nil
            self.lastProgress = nil
            self.outcomeDecided = false
            var effects = Effects()
            if let reason = self.schedulerGone {
                self.finish(.schedulerShutDown(reason), &effects)
                return effects
            }
            let first = self.policy.startsImmediately ? now : now.advanced(by: self.policy.interval)
            self.scheduleQuery(at: first, &effects)
            self.checkInvariants()
            return effects
        }

        /// The next-query timer of `ticket` fired at `now`: start the attempt, unless stale.
        mutating func nextQueryFired(_ ticket: Ticket, now: MonotonicInstant) -> Effects {
            self.timersFired += 1
            guard case .waiting(let current, _, _) = self.phase, current == ticket else { return Effects() }
            var effects = Effects()
            if let deadline = self.deadline, now >= deadline {
                // The timer ran late, past the deadline: no attempt would have any time left.
                self.finish(.timedOut, &effects)
                return effects
            }
            self.attempts += 1
            let context = PollAttempt(
                number: self.attempts, session: self.epoch, startedAt: now,
                deadline: PollSchedule.attemptDeadline(
                    start: now, attemptTimeout: self.policy.attemptTimeout, deadline: self.deadline))
            self.phase = .querying(Attempt(ticket: ticket, context: context))
            if let timeout = context.deadline {
                effects.arm = (.attemptTimeout, ticket, timeout)
            }
            effects.startQuery = (ticket, context, self.handlers?.context)
            self.checkInvariants()
            return effects
        }

        /// Keeps `timer`'s handle so it can be cancelled; `false` when its phase has already
        /// moved on (the caller cancels it, which is harmless if it has run).
        mutating func attach(timer: DelayedWork, kind: TimerKind, to ticket: Ticket) -> Bool {
            switch (self.phase, kind) {
            case (.waiting(let current, let at, nil), .nextQuery) where current == ticket:
                self.phase = .waiting(ticket: current, at: at, timer: timer)
                return true
            case (.querying(var attempt), .attemptTimeout) where attempt.ticket == ticket && attempt.timer == nil:
                attempt.timer = timer
                self.phase = .querying(attempt)
                return true
            default:
                return false
            }
        }

        /// Keeps an async query's task so it can be cancelled when its attempt is superseded;
        /// `false` when the attempt has already ended (the caller cancels the task).
        mutating func attach(task: Task<Void, Never>, to ticket: Ticket) -> Bool {
            guard case .querying(var attempt) = self.phase, attempt.ticket == ticket, attempt.task == nil else {
                return false
            }
            attempt.task = task
            self.phase = .querying(attempt)
            return true
        }

        /// First half of taking a response: `nil` (and counted as dropped) when stale, otherwise
        /// the last reported value, for the change test the owner runs outside the lock.
        mutating func responseContext(for ticket: Ticket) -> ResponseContext? {
            guard case .querying(let attempt) = self.phase, attempt.ticket == ticket else {
                self.droppedResponses += 1
                return nil
            }
            return ResponseContext(lastReported: self.lastReported)
        }

        /// Second half: applies the digested response of `ticket`, received at `now`. Stale
        /// responses (another copy won the race since the first half) are counted and ignored.
        mutating func receive(_ digest: Digest, for ticket: Ticket, now: MonotonicInstant) -> Effects {
            guard case .querying(let attempt) = self.phase, attempt.ticket == ticket else {
                self.droppedResponses += 1
                return Effects()
            }
            var effects = Effects()
            switch digest {
            case .success(let value, let isDone, let isChanged, let progress):
                self.consecutiveErrors = 0
                let goesBack = progress.flatMap { new in self.lastProgress.map { new < $0 } } ?? false
                if isChanged && !goesBack {
                    self.lastReported = value
                    if let progress { self.lastProgress = progress }
                    self.enqueue(.update(value, self.handlers!), &effects)
                }
                if isDone {
                    self.finish(.completed(value), &effects)
                } else {
                    let next = PollSchedule.nextStart(
                        previousStart: attempt.context.startedAt, response: now, interval: self.policy.interval)
                    self.scheduleQuery(at: next, &effects)
                }
            case .failure(let error, let hint):
                self.attemptFailed(attempt, error: error, hint: hint, now: now, &effects)
            }
            self.checkInvariants()
            return effects
        }

        /// The attempt timer of `ticket` fired at `now`: the attempt is abandoned.
        mutating func attemptTimeoutFired(_ ticket: Ticket, now: MonotonicInstant) -> Effects {
            self.timersFired += 1
            guard case .querying(let attempt) = self.phase, attempt.ticket == ticket else { return Effects() }
            var effects = Effects()
            if let deadline = self.deadline, now >= deadline {
                self.finish(.timedOut, &effects)
            } else {
                let limit = (attempt.context.deadline ?? now) - attempt.context.startedAt
                let error = PollError.attemptTimedOut(attempt: attempt.context.number, after: limit)
                self.attemptFailed(attempt, error: error, hint: nil, now: now, &effects)
            }
            self.checkInvariants()
            return effects
        }

        /// Ends the running session with `.cancelled`. Returns `false` (and does nothing) when
        /// no session runs, or when `session` is given and is not the running one.
        mutating func cancel(session: UInt64?) -> (cancelled: Bool, effects: Effects) {
            guard self.isRunning, session == nil || session == self.epoch else { return (false, Effects()) }
            var effects = Effects()
            self.finish(.cancelled, &effects)
            self.checkInvariants()
            return (true, effects)
        }

        /// The scheduler stopped for good: ends the running session with
        /// `schedulerShutDown(reason)`; later sessions end that way at once.
        ///
        /// - Returns: The effects (timer and task to cancel), and whether the caller must deliver
        ///   the outbox itself, here: when it holds the drain claim (`holdingClaim`: the scheduler
        ///   refused its delivery work), when nobody does, or — `afterLastWork`, from the
        ///   scheduler's shutdown handler — when the claim belongs to delivery work the scheduler
        ///   dropped. Idempotent.
        mutating func schedulerShutDown(
            _ reason: SchedulingError, holdingClaim: Bool, afterLastWork: Bool
        ) -> (effects: Effects, deliverHere: Bool) {
            if self.schedulerGone == nil { self.schedulerGone = reason }
            var effects = Effects()
            if self.isRunning { self.finish(.schedulerShutDown(reason), &effects) }
            // A claim made just now by `finish`, or the caller's own, is ours to deliver.
            var deliverHere = holdingClaim || effects.scheduleDrain
            effects.scheduleDrain = false
            if !deliverHere && !self.outbox.isEmpty {
                if !self.drainScheduled {
                    self.drainScheduled = true
                    deliverHere = true
                } else if afterLastWork && !self.drainingInline {
                    deliverHere = true  // the scheduler dropped the delivery work holding the claim
                }
            }
            if deliverHere { self.drainingInline = true }
            self.checkInvariants()
            return (effects, deliverHere)
        }

        /// Takes every decided delivery, in order; an empty result ends the drain (the next
        /// delivery schedules a new one).
        mutating func takeDeliveries() -> [Delivery] {
            if self.outbox.isEmpty {
                self.drainScheduled = false
                self.drainingInline = false
                return []
            }
            var batch: [Delivery] = []
            swap(&batch, &self.outbox)
            return batch
        }

        // MARK: Transitions

        private mutating func attemptFailed(
            _ attempt: Attempt, error: any Error, hint: Duration?, now: MonotonicInstant, _ effects: inout Effects
        ) {
            self.consecutiveErrors += 1
            let backoff = self.policy.backoff
            if self.consecutiveErrors >= backoff.maximumConsecutiveErrors {
                self.finish(.failed(error), &effects)
                return
            }
            let delay = PollSchedule.errorDelay(
                consecutiveErrors: self.consecutiveErrors, minimum: backoff.minimumDelay,
                maximum: backoff.maximumDelay, hint: hint, using: &self.random)
            let next = PollSchedule.nextStart(
                previousStart: attempt.context.startedAt, response: now, interval: self.policy.interval,
                errorDelay: delay)
            self.scheduleQuery(at: next, &effects)
        }

        /// Leaves the current phase for `.waiting(at)`, or ends with `timedOut` when `at` is
        /// at or past the deadline (no query starts without time to answer).
        private mutating func scheduleQuery(at start: MonotonicInstant, _ effects: inout Effects) {
            if let deadline = self.deadline, start >= deadline {
                self.finish(.timedOut, &effects)
                return
            }
            self.releaseCurrentPhase(&effects)
            self.lastSequence += 1
            let ticket = Ticket(session: self.epoch, sequence: self.lastSequence)
            self.phase = .waiting(ticket: ticket, at: start, timer: nil)
            effects.arm = (.nextQuery, ticket, start)
        }

        /// Decides the session's one outcome; every later event of the session is stale.
        private mutating func finish(_ outcome: PollOutcome<Value>, _ effects: inout Effects) {
            guard !self.outcomeDecided else {
                PollingMisuse.internalInconsistency("second outcome \(outcome) in phase \(self.phase)")
            }
            self.outcomeDecided = true
            switch outcome {
            case .completed: self.completedSessions += 1
            case .failed: self.failedSessions += 1
            case .timedOut: self.timedOutSessions += 1
            case .cancelled: self.cancelledSessions += 1
            case .schedulerShutDown: self.shutDownSessions += 1
            }
            self.releaseCurrentPhase(&effects)
            self.phase = .finished(outcome)
            self.enqueue(.outcome(outcome, self.handlers!), &effects)
        }

        /// The running phase's timer and task are no longer needed.
        private mutating func releaseCurrentPhase(_ effects: inout Effects) {
            switch self.phase {
            case .waiting(_, _, let timer):
                effects.cancelTimer = timer
            case .querying(let attempt):
                effects.cancelTimer = attempt.timer
                effects.cancelTask = attempt.task
            case .idle, .finished:
                break
            }
        }

        private mutating func enqueue(_ delivery: Delivery, _ effects: inout Effects) {
            self.outbox.append(delivery)
            if !self.drainScheduled {
                self.drainScheduled = true
                effects.scheduleDrain = true
            }
        }

        // MARK: Invariants

        func checkInvariants() {
            #if SERIAL_INTERNAL_CHECKS
            precondition(
                self.outbox.isEmpty || self.drainScheduled,
                "Poller.State: \(self.outbox.count) deliveries waiting but no drain scheduled; phase \(self.phase)")
            switch self.phase {
            case .waiting(let ticket, _, _):
                precondition(ticket.session == self.epoch, "Poller.State: waiting ticket \(ticket) in epoch \(self.epoch)")
            case .querying(let attempt):
                precondition(
                    attempt.ticket.session == self.epoch && attempt.context.number == self.attempts,
                    "Poller.State: attempt \(attempt.context) ticket \(attempt.ticket), epoch \(self.epoch), "
                        + "attempts \(self.attempts)")
            case .idle:
                precondition(self.epoch == 0, "Poller.State: idle after \(self.epoch) sessions")
            case .finished:
                break
            }
            precondition(
                self.consecutiveErrors < self.policy.backoff.maximumConsecutiveErrors || !self.isRunning,
                "Poller.State: running with \(self.consecutiveErrors) consecutive errors")
            #endif
        }
    }
}
