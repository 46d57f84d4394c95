import SerialCore

/// Timers on one scheduler, kept in a timing wheel (`TimingWheel`'s levels and slots, threaded
/// through the timers themselves) and woken by a single delayed wake-up.
///
/// ```swift
/// let queue = SerialQueue(label: "timers")
/// let timers = TimerService(scheduler: queue)
/// let handle = try timers.schedule(after: .seconds(2)) { print("fired on", queue) }
/// handle.cancel()   // true: it will not fire
/// ```
///
/// **Wake-ups.** The service keeps at most one delayed wake-up armed on its scheduler, for the
/// wheel's next occupied slot (`TimingWheel.nextExpiry`), and none when no timer was ever
/// pending. Scheduling re-arms only when the new timer's slot comes before the armed one, so
/// a stream of timers further out costs no scheduler call. Cancelling never re-arms: a
/// wake-up left for a cancelled timer runs once, finds nothing due, and re-arms for what is
/// left, if anything. Far timers cost no wake-ups until their slot approaches: at most one
/// per wheel level on their way down, typically only the one when they are due.
///
/// **Time.** A deadline is rounded up to the service's tick: a callback never runs before its
/// deadline, and, on a punctual scheduler, at most one tick after it. Ticks count from the
/// scheduler's `now` when the service was created.
///
/// **Threads.** `schedule`, `cancel`, `pendingCount` and `stop` may be called from any thread,
/// including from callbacks. The wheel sits behind a mutex; decisions are made under it and
/// scheduler calls and callbacks happen after it is released. Callbacks run on the
/// scheduler, one at a time, in deadline order (submission order within a tick), at most
/// `callbacksPerTurn` per scheduler turn: the rest continue in a follow-up turn submitted
/// with `execute`, so a burst of expiries cannot starve other work on the scheduler.
///
/// **Context.** A callback runs with the `WorkContext` its `schedule` call had (a trace, once an
/// integration installs one); with nothing installed, scheduling pays one relaxed load for it.
///
/// **Lifetime.** A `TimerHandle` keeps its service alive (so does a callback that captures
/// the service, until it runs); a pending timer alone does not. When the last reference to
/// the service goes, its pending timers end `.stopped` without running, as `stop()` would.
///
/// **Failure.** Every timer ends with exactly one terminal `TimerHandle.status`: `.fired`,
/// `.cancelled`, `.stopped`, or `.schedulerShutDown(reason)` when its scheduler stopped for
/// good before the callback was handed to it (the callback is then released unrun). The
/// service learns of that shutdown through `Scheduling.whenShutDown` (on a `SerialQueue`: on
/// its worker, as its last act) or when arming a wake-up or posting a follow-up turn is
/// refused (on the thread that made that call); either way it stops for good on that
/// thread, ending every pending timer, and from then on `schedule` throws
/// `.schedulerShutDown`. A `schedule` call whose wake-up is refused throws it too (its timer
/// ended with the others).
///
/// - Complexity: `schedule` and `cancel` are O(1) whatever the number of pending timers:
///   a wheel insert or unlink under the lock, and one allocation (the timer, which is its own
///   wheel node: 64 bytes of heap per pending timer, plus whatever its callback captures).
public final class TimerService: Sendable {
    /// The scheduler callbacks run on.
    public let scheduler: any Scheduling
    /// The wheel's resolution.
    public let tick: Duration
    /// The most timers that may be pending at once.
    public let maximumPending: Int
    /// The most callbacks one scheduler turn runs.
    public let callbacksPerTurn: Int

    /// Holds the wheel. Closures given to the scheduler capture the core, never the service,
    /// so releasing the service can stop it (and the service needs no weak references, which
    /// would slow every retain of it down).
    let core: Core

    /// Creates a service whose callbacks run on `scheduler`.
    ///
    /// - Parameters:
    ///   - scheduler: where wake-ups are armed and callbacks run (a `SerialQueue`, or a
    ///     `VirtualScheduler` in tests).
    ///   - tick: the resolution; deadlines round up to it. Coarser ticks mean fewer wake-ups.
    ///   - maximumPending: beyond this many pending timers, `schedule` throws `.tooManyPending`.
    ///   - callbacksPerTurn: the most callbacks run in one scheduler turn.
    /// - Precondition: `tick` is at least one nanosecond, `maximumPending` and
    ///   `callbacksPerTurn` at least 1; otherwise this traps, saying which.
    public init(
        scheduler: any Scheduling,
        tick: Duration = .milliseconds(1),
        maximumPending: Int = Int.max,
        callbacksPerTurn: Int = 1024
    ) {
        let nanoseconds = tick.saturatingNanoseconds
        if nanoseconds < 1 { TimersMisuse.invalidTick(tick) }
        if maximumPending < 1 { TimersMisuse.invalidMaximumPending(maximumPending) }
        if callbacksPerTurn < 1 { TimersMisuse.invalidCallbacksPerTurn(callbacksPerTurn) }
        self.scheduler = scheduler
        self.tick = tick
        self.maximumPending = maximumPending
        self.callbacksPerTurn = callbacksPerTurn
        self.core = Core(
            scheduler: scheduler, tickNanoseconds: UInt64(nanoseconds), maximumPending: maximumPending,
            callbacksPerTurn: callbacksPerTurn)
    }

    deinit {
        self.core.stop()  // drops pending callbacks, cancels the armed wake-up, withdraws the shutdown handler
    }

    /// Runs `callback` on the scheduler once `delay` has passed (a delay of zero or less: at
    /// the next tick).
    ///
    /// - Returns: A handle whose `cancel()` prevents the callback and whose `status` tells how
    ///   the timer ended.
    /// - Throws: `.stopped` after `stop()`; `.schedulerShutDown` once the scheduler is gone;
    ///   `.tooManyPending` when `maximumPending` timers wait.
    /// - Complexity: O(1): a wheel insert under the lock, plus a scheduler call only when
    ///   this timer is due before the armed wake-up. Allocates the timer (64 bytes; the handle
    ///   is a struct).
    @discardableResult
    public func schedule(
        after delay: Duration, _ callback: @escaping @Sendable () -> Void
    ) throws(TimerServiceError) -> TimerHandle {
        let now = self.scheduler.now
        let timer = Timer(deadline: now.advanced(by: delay), stage: .pending(WorkContext.bind(callback)))
        try self.core.insert(timer, now: now)
        return TimerHandle(service: self, timer: timer)
    }

    /// Runs `callback` on the scheduler at or after `deadline` (a past deadline: at the next tick).
    ///
    /// - Returns: A handle whose `cancel()` prevents the callback.
    /// - Throws: as `schedule(after:_:)`.
    /// - Complexity: O(1), as `schedule(after:_:)`.
    @discardableResult
    public func schedule(
        at deadline: MonotonicInstant, _ callback: @escaping @Sendable () -> Void
    ) throws(TimerServiceError) -> TimerHandle {
        let timer = Timer(deadline: deadline, stage: .pending(WorkContext.bind(callback)))
        try self.core.insert(timer, now: self.scheduler.now)
        return TimerHandle(service: self, timer: timer)
    }

    /// Runs `callback` on the scheduler every `period`, the first time at `first` (by
    /// default one period from now), until its handle is cancelled or the service stops.
    ///
    /// **Fixed rate.** Period `k` is due at `first + k × period`, computed from the first
    /// deadline, so it does not drift however many periods pass or however late callbacks
    /// run. A period whose deadline has already passed when the previous one fires (the
    /// scheduler was busy, or `period` is shorter than the tick) is skipped and counted in
    /// `TimerHandle.skippedPeriods`: callbacks never come in a burst to catch up. For fixed
    /// delay (the next run a period after the previous one *ended*), schedule a one-shot
    /// timer and `reschedule(after:)` its handle from its callback, or use this timer and
    /// `reschedule` it at the end of each callback.
    ///
    /// Cancelling it (also from inside its own callback) stops it: no later period runs.
    /// Its `status` stays `.pending` while it repeats.
    ///
    /// - Parameters:
    ///   - period: the interval; at least one nanosecond.
    ///   - first: the first deadline.
    ///   - callback: runs on the scheduler once per period that is not skipped.
    /// - Throws: as `schedule(after:_:)`.
    /// - Complexity: O(1); allocates the timer (one object, with its schedule).
    @discardableResult
    public func schedule(
        every period: Duration, startingAt first: MonotonicInstant? = nil, _ callback: @escaping @Sendable () -> Void
    ) throws(TimerServiceError) -> TimerHandle {
        let nanoseconds = period.saturatingNanoseconds
        if nanoseconds < 1 { TimersMisuse.invalidPeriod(period) }
        let now = self.scheduler.now
        let deadline = first ?? now.advanced(by: period)
        let timer = RepeatingTimer(
            periodNanoseconds: UInt64(nanoseconds), first: deadline, callback: WorkContext.bind(callback))
        try self.core.insert(timer, now: now)
        return TimerHandle(service: self, timer: timer)
    }

    /// Timers that have neither run nor been cancelled, including due ones waiting for a turn.
    public var pendingCount: Int {
        self.core.state.withLock { $0.pendingCount }
    }

    /// How many delayed wake-ups of this service have run on the scheduler so far, including
    /// ones that found nothing due (left armed for timers cancelled since). With only far
    /// timers pending this stays still: a measure of idle wake-ups.
    public var wakeUpCount: Int {
        self.core.state.withLock { $0.wakeUps }
    }

    /// Whether the service stopped for good: `stop()`, its release, or its scheduler's shutdown.
    public var isStopped: Bool {
        self.core.state.withLock { $0.isStopped }
    }

    /// Stops the service: every timer that has not been handed to a scheduler turn is dropped
    /// without running (status `.stopped`), the armed wake-up is cancelled, and later
    /// `schedule` calls throw `.stopped`. Handles of dropped timers then answer `cancel()` with
    /// `false`. After the scheduler's shutdown stopped the service, this does nothing.
    ///
    /// A turn already running on the scheduler finishes its batch (callbacks that were due and
    /// taken before the call). Calling `stop()` again does nothing and returns 0.
    ///
    /// - Returns: How many timers were dropped.
    /// - Complexity: O(pending).
    @discardableResult
    public func stop() -> Int {
        self.core.stop()
    }
}
