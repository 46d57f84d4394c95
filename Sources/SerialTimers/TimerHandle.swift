import SerialCore

/// The handle of one timer of a `TimerService`.
///
/// Holding it keeps the service alive, not the callback: the callback is released as soon
/// as the timer reaches a terminal `status`. Copies are the same handle.
public struct TimerHandle: Sendable {
    let service: TimerService
    let timer: TimerService.Timer

    /// The deadline of the next firing, or of the last one (the callback runs at the first
    /// tick at or after it); `reschedule` moves it, a repeating timer advances it.
    public var deadline: MonotonicInstant {
        self.service.core.state.withLock { _ in self.timer.deadline }
    }

    /// Prevents the callback if it has not been handed to the scheduler yet.
    ///
    /// - Returns: `true` when this call prevented the callback (the status is then
    ///   `.cancelled`); `false` when it had already run, was taken for a running turn (it will
    ///   run), was cancelled before, or the service or its scheduler stopped. Safe from any
    ///   thread, any number of times.
    /// - Complexity: O(1): the timer is unlinked from the wheel at once, under the service's lock.
    @discardableResult
    public func cancel() -> Bool {
        self.service.core.cancel(self.timer)
    }

    /// Moves the timer's deadline to `delay` from now, earlier or later, in place: the way to
    /// push an idle timeout back on every packet.
    ///
    /// When this races the timer's firing, exactly one happens: the timer fires at the new
    /// deadline (`.movedToNewDeadline`) or it had already been handed to the scheduler at the
    /// old one (`.firedAtOldDeadline`); never both, never neither. A repeating timer's
    /// schedule restarts from the new deadline.
    ///
    /// **Fixed delay.** Called from the timer's own callback, a one-shot timer that has just
    /// fired is armed again (`.movedToNewDeadline`, status back to `.pending`): it fires once
    /// more, at the new deadline, with the same callback, as the kernel's `mod_timer` or
    /// Tokio's `Sleep::reset` allow. From anywhere else, a timer already handed to
    /// the scheduler stays fired (`.firedAtOldDeadline`), so a re-arm racing the firing never
    /// makes it fire twice; and once its callback has returned, it is released. The callback
    /// reaches its own handle through something it captures (the README's "fixed delay"
    /// example keeps it in a `Mutex`).
    ///
    /// **Tolerance.** `nil` keeps the timer's tolerance; a value sets it, as in
    /// `TimerService.schedule(after:tolerance:_:)`. The rule is the same whether the timer is
    /// pending or re-armed from its own callback. A timer scheduled without one has no room
    /// to keep more than a tick: given less it is precise from now on (a later `nil` keeps it
    /// precise); given a tick or more it keeps its one tick, which is inside that window too
    /// (never early, only less coalesced).
    ///
    /// - Complexity: O(1), one lock acquisition, no allocation; a scheduler call only when
    ///   the new window ends before the armed wake-up. A precise timer: O(log p).
    /// - Precondition: `tolerance` is not negative.
    @discardableResult
    public func reschedule(after delay: Duration, tolerance: Duration? = nil) -> TimerReschedule {
        let now = self.service.scheduler.now
        return self.service.core.reschedule(
            self.timer, to: now.advanced(by: delay), tolerance: tolerance?.toleranceNanoseconds(), now: now)
    }

    /// Moves the timer's deadline to `deadline`; see `reschedule(after:tolerance:)`.
    ///
    /// - Precondition: `tolerance` is not negative.
    @discardableResult
    public func reschedule(at deadline: MonotonicInstant, tolerance: Duration? = nil) -> TimerReschedule {
        self.service.core.reschedule(
            self.timer, to: deadline, tolerance: tolerance?.toleranceNanoseconds(), now: self.service.scheduler.now)
    }

    /// For a repeating timer: the periods skipped so far because their deadline had passed
    /// before the previous one fired (never run late in a burst). Zero for one-shot timers.
    public var skippedPeriods: Int {
        self.service.core.state.withLock { _ in (self.timer as? TimerService.RepeatingTimer)?.skipped ?? 0 }
    }

    /// For a repeating timer: how many periods have been handed to the scheduler so far.
    public var firedPeriods: Int {
        self.service.core.state.withLock { state in
            guard let repeating = self.timer as? TimerService.RepeatingTimer else {
                return state.status(of: self.timer) == .fired ? 1 : 0
            }
            return repeating.fired
        }
    }

    /// Whether the timer still waits in the wheel (neither due-and-taken, run, nor cancelled).
    public var isPending: Bool {
        self.service.core.state.withLock { _ in self.timer.isWaiting }
    }

    /// Where the timer stands: `.pending` until its one terminal status (`.fired`,
    /// `.cancelled`, `.stopped` or `.schedulerShutDown`), which never changes afterwards.
    /// This is how a timer whose scheduler went away is observed: its callback does not run.
    public var status: TimerStatus {
        self.service.core.status(of: self.timer)
    }
}
