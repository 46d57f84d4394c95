import SerialCore

/// `withWheelDeadline`'s deadline passed before its operation finished: the operation was
/// cancelled and ended by throwing.
public struct WheelDeadlineExceeded: Error, Hashable, Sendable, CustomStringConvertible {
    /// The deadline that passed.
    public let deadline: MonotonicInstant

    /// Creates the error for `deadline`.
    public init(deadline: MonotonicInstant) {
        self.deadline = deadline
    }

    /// The error in words, for logs.
    public var description: String {
        "the deadline \(self.deadline) passed before the operation finished; it was cancelled"
    }
}

/// Runs `operation` with a deadline kept by one timer on `clock`'s wheel: when the deadline
/// passes first, the operation is cancelled, and if it then throws, this throws
/// `WheelDeadlineExceeded`.
///
/// ```swift
/// let profile = try await withWheelDeadline(after: .seconds(2)) {
///     try await api.fetchProfile()
/// }
/// ```
///
/// **Cost.** One timer armed and cancelled (O(1) each) and one child task that runs
/// `operation`; no sleeping task, no Dispatch timer and no hop to another thread to start it.
/// Nothing is held after it returns.
///
/// **Threads.** The child starts inside this call, on the thread running it, not as a job queued
/// behind other work (SE-0472's `addImmediateTask`): `operation` runs there until its first
/// suspension, and resumes after it on the child's executor (the caller's task executor
/// preference, else the global one). An `operation` that never suspends has finished when the
/// child is added, and the call returns without any hop. The call itself runs where any
/// nonisolated `async` function does: called from an actor, it first leaves the actor's executor.
///
/// **Why a child task.** The timer could cancel the caller's own task (`UnsafeCurrentTask` has
/// `cancel()`), but task cancellation cannot be undone: the caller would stay cancelled after
/// the deadline's scope, and every later `await` of it would see that. Cancelling a child
/// confines it to `operation`.
///
/// **Outcomes.** Exactly one: `operation`'s value (also when it finishes after the deadline
/// without throwing: the work was done), `operation`'s error, `WheelDeadlineExceeded` when it
/// threw after this call's deadline cancelled it, or after the calling task was cancelled once
/// this deadline had passed (as by an outer deadline fired in the same wake-up, whichever
/// callback runs first), or `CancellationError` (or whatever `operation` threw) when the
/// calling task itself was cancelled before the deadline: the moment of that cancellation
/// counts, not the moment `operation` ends, which may be past the deadline. A caller already
/// cancelled when it makes the call was cancelled before this deadline existed: it gets its
/// cancellation, whatever the clock says. A timer the service
/// refuses or ends unrun (stopped, scheduler shut down) throws that `TimerServiceError`,
/// cancelling `operation` (also when the calling task was cancelled as well, as by an outer
/// deadline on the same stopped service).
///
/// **Nesting.** Every call arms its own timer, whatever it runs inside: no deadline stands in
/// for another. Nested in another `withWheelDeadline`'s operation, the timer that fires first
/// governs; each fires within [deadline, deadline + tolerance], so a window that ends before the
/// other begins always wins. When the inner timer fires first (or in the same wake-up), the
/// inner call throws `WheelDeadlineExceeded` with its own deadline; when the outer one fires
/// first, the inner call sees its caller cancelled: before the inner deadline, it throws what
/// `operation` throws; once the inner deadline has passed (a tolerant outer window reaching past
/// it), it reports its own `WheelDeadlineExceeded` as well. The outer call reports
/// `WheelDeadlineExceeded`. Deadlines on different clocks each keep their
/// own timeline. A deadline inside an unstructured `Task {}` is kept by its own timer: the
/// outer deadline never cancels that task (task cancellation does not reach it), and its scope
/// may be over by then.
///
/// - Parameters:
///   - deadline: when to cancel `operation`.
///   - tolerance: how late the cancellation may come (`nil`: the service's tick; `.zero`: precise).
///   - clock: whose timer service keeps the deadline (by default the shared one).
///   - operation: the work, run in a child task started on the calling thread.
public func withWheelDeadline<Value: Sendable>(
    at deadline: MonotonicInstant,
    tolerance: Duration? = nil,
    clock: WheelClock = WheelClock(),
    operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    // No shortcut for nested calls: a task-local "an earlier deadline governs" is inherited by
    // unstructured tasks (which the outer deadline never cancels), cannot compare instants of
    // two clocks, and would have to weigh tolerances. One timer per call is O(1).
    let watch = WheelDeadlineWatch()
    // Cancelled before the call: before this deadline existed, so the caller's own cancellation,
    // whatever the clock says now (the handler below would run at once and read the clock now).
    if Task.isCancelled { watch.callerCancelled(pastDeadline: false) }
    // The alarm belongs to the callback alone: its release tells whether the timer ran.
    let timer = try clock.timers.schedule(at: deadline, tolerance: tolerance) {
        [alarm = WheelDeadlineWatch.Alarm(watch)] in alarm.ring()
    }
    defer { timer.cancel() }
    return try await withTaskCancellationHandler {
        try await withThrowingTaskGroup(of: Value.self, returning: Value.self) { group in
            // Started on this thread, not queued: `operation` runs here until it first suspends,
            // and one that never does has finished before `next()`, which then returns without a hop.
            group.addImmediateTask { try await watch.run(operation) }
            do {
                return try await group.next()!
            } catch {
                // The service ended this call's timer unrun: say why, even if the caller was
                // cancelled too (a stop ends every timer of a nested pair in one go, and the
                // outer one's end cancels this caller as well).
                if watch.ending == .timerEndedUnrun { throw timer.status.whyEndedUnrun }
                // The runtime may cancel the child (which then throws, and ends up here) before it
                // runs this call's cancellation handler: whichever records first, the handler or
                // this, takes the moment, within the same few instructions of the cancellation.
                if Task.isCancelled { watch.callerCancelled(pastDeadline: clock.now >= deadline) }
                switch watch.callerCancellation {
                case .beforeDeadline?:
                    // The caller's own cancellation, whenever the operation ended and whatever
                    // this deadline's timer did after it.
                    throw error
                case .atOrAfterDeadline?:
                    // Cancelled once this deadline had passed, as by an outer deadline fired in
                    // the same wake-up (its callback may run just before this one's): this
                    // deadline is exceeded as well; say so, whichever callback ran first.
                    throw WheelDeadlineExceeded(deadline: deadline)
                case nil:
                    if watch.ending == .expired { throw WheelDeadlineExceeded(deadline: deadline) }
                    throw error  // the operation's own error
                }
            }
        }
    } onCancel: {
        // Under the runtime's lock: see RuntimeCallback.
        RuntimeCallback.run { watch.callerCancelled(pastDeadline: clock.now >= deadline) }
    }
}

/// Runs `operation` with a deadline `duration` from now on `clock`; see
/// `withWheelDeadline(at:tolerance:clock:operation:)`.
public func withWheelDeadline<Value: Sendable>(
    after duration: Duration,
    tolerance: Duration? = nil,
    clock: WheelClock = WheelClock(),
    operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withWheelDeadline(
        at: clock.now.advanced(by: duration), tolerance: tolerance, clock: clock, operation: operation)
}
