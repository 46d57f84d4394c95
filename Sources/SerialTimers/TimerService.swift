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
/// earliest end of a waiting timer's window, and none when no timer is pending. Scheduling
/// re-arms only when the new timer's window ends before the armed wake-up, so a stream of
/// timers further out costs no scheduler call. Cancelling never re-arms: a wake-up left for a
/// cancelled timer runs once, finds nothing due, and re-arms for what is left, if anything.
/// A wake-up fires every timer whose window has begun: timers whose windows overlap share it.
///
/// **Time and tolerance.** A timer fires within [deadline, deadline + tolerance], never early
/// (on a scheduler that runs its wake-ups on time). The default tolerance is one tick: the
/// deadline rounds up to the service's tick, and timers waiting in a wheel of ticks cost O(1).
/// A tolerance under one tick (`.zero` included) is precise: such timers wait in a heap by
/// exact deadline, beside the wheel, and the service wakes at that deadline. A tolerance of a
/// tick or more lets the wake-up move to the last tick of the window, where it is shared. See
/// `schedule(after:tolerance:_:)`. Ticks count from the scheduler's `now` when the service
/// was created.
///
/// **Threads.** `schedule`, `cancel`, `pendingCount` and `stop` may be called from any thread,
/// including from callbacks. The wheel sits behind a mutex; decisions are made under it and
/// scheduler calls and callbacks happen after it is released. Callbacks run on the
/// scheduler, one at a time, in the order their timers fall due: a timer in the wheel at the
/// tick its deadline rounds up to (submission order within a tick), a precise one at its exact
/// deadline. That is deadline order to the tick, not exactly: a precise timer may run before a
/// wheel timer whose deadline is earlier in the same tick. A tolerance never puts a timer
/// behind one that falls due later: every wake-up fires each timer whose window has begun, in
/// that order. At most `callbacksPerTurn` run per scheduler turn: the rest continue in a
/// follow-up turn submitted with `execute`, so a burst of expiries cannot starve other work on
/// the scheduler.
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
/// - Complexity: `schedule`, `reschedule` and `cancel` are O(1) whatever the number of pending
///   timers: a wheel insert or unlink under the lock, and one allocation (the timer, which is
///   its own wheel node: 64 bytes of heap per pending timer with the default tolerance, 80 with
///   a tolerance given, plus whatever its callback captures). A precise timer costs O(log p) to
///   schedule or move among p precise timers, O(1) to cancel.
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
    /// the next tick, or at once with a tolerance under a tick).
    ///
    /// **Tolerance.** The callback runs within [deadline, deadline + `tolerance`], never
    /// early (on a scheduler that wakes on time: a busy one delays it further).
    /// - `nil`, the default: one tick. The timer fires at the tick its deadline rounds up to,
    ///   with every timer due in that tick: cheap, and right for idle timeouts and heartbeats.
    /// - Under one tick, `.zero` included: precise. The service wakes at the exact deadline
    ///   (as close to it as the scheduler wakes), for retries, pacing, rate limits and frame
    ///   clocks. Costs a wake-up per distinct deadline and O(log p) to schedule or move
    ///   among p precise timers.
    /// - A tick or more: coalesced. The service wakes at the last tick inside the window and
    ///   fires every timer whose window has begun by then, so timers whose windows overlap
    ///   share one wake-up: 100k timers spread over a second with 10 ms of tolerance wake it
    ///   about 100 times, not 1,000.
    ///
    /// - Returns: A handle whose `cancel()` prevents the callback and whose `status` tells how
    ///   the timer ended.
    /// - Throws: `.stopped` after `stop()`; `.schedulerShutDown` once the scheduler is gone;
    ///   `.tooManyPending` when `maximumPending` timers wait.
    /// - Complexity: O(1): a wheel insert under the lock, plus a scheduler call only when
    ///   this timer's window ends before the armed wake-up. Allocates the timer (64 bytes with
    ///   the default tolerance, 80 with one given; the handle is a struct). A precise timer:
    ///   O(log p), p the precise timers pending.
    /// - Precondition: `tolerance` is not negative; that traps, naming it.
    @discardableResult
    public func schedule(
        after delay: Duration, tolerance: Duration? = nil, _ callback: @escaping @Sendable () -> Void
    ) throws(TimerServiceError) -> TimerHandle {
        let now = self.scheduler.now
        let timer = Self.timer(deadline: now.advanced(by: delay), tolerance: tolerance, WorkContext.bind(callback))
        try self.core.insert(timer, now: now)
        return TimerHandle(service: self, timer: timer)
    }

    /// Runs `callback` on the scheduler at or after `deadline` (a past deadline: at the next
    /// tick, or at once with a tolerance under a tick), within `tolerance` after it; see
    /// `schedule(after:tolerance:_:)`.
    ///
    /// - Returns: A handle whose `cancel()` prevents the callback.
    /// - Throws: as `schedule(after:tolerance:_:)`.
    /// - Complexity: as `schedule(after:tolerance:_:)`.
    /// - Precondition: `tolerance` is not negative.
    @discardableResult
    public func schedule(
        at deadline: MonotonicInstant, tolerance: Duration? = nil, _ callback: @escaping @Sendable () -> Void
    ) throws(TimerServiceError) -> TimerHandle {
        let timer = Self.timer(deadline: deadline, tolerance: tolerance, WorkContext.bind(callback))
        try self.core.insert(timer, now: self.scheduler.now)
        return TimerHandle(service: self, timer: timer)
    }

    /// A one-shot timer: the 64-byte default one, or one that carries its tolerance.
    private static func timer(
        deadline: MonotonicInstant, tolerance: Duration?, _ callback: @escaping @Sendable () -> Void
    ) -> Timer {
        guard let tolerance else { return Timer(deadline: deadline, stage: .pending(callback)) }
        return TolerantTimer(deadline: deadline, tolerance: tolerance.toleranceNanoseconds(), stage: .pending(callback))
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
    ///   - tolerance: how late each period may run, as in `schedule(after:tolerance:_:)`
    ///     (`nil`: one tick; `.zero`: precise).
    ///   - callback: runs on the scheduler once per period that is not skipped.
    /// - Throws: as `schedule(after:tolerance:_:)`.
    /// - Complexity: O(1) (O(log p) precise); allocates the timer (one object, with its schedule).
    /// - Precondition: `period` is at least one nanosecond and `tolerance` is not negative.
    @discardableResult
    public func schedule(
        every period: Duration, startingAt first: MonotonicInstant? = nil, tolerance: Duration? = nil,
        _ callback: @escaping @Sendable () -> Void
    ) throws(TimerServiceError) -> TimerHandle {
        let nanoseconds = period.saturatingNanoseconds
        if nanoseconds < 1 { TimersMisuse.invalidPeriod(period) }
        let now = self.scheduler.now
        let deadline = first ?? now.advanced(by: period)
        let timer = RepeatingTimer(
            periodNanoseconds: UInt64(nanoseconds), first: deadline, tolerance: tolerance?.toleranceNanoseconds(),
            callback: WorkContext.bind(callback))
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
