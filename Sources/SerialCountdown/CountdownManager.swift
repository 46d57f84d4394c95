import SerialCore

/// Countdowns per receiver object, all driven by one shared ticker.
///
/// ```swift
/// let queue = SerialQueue(label: "ui")
/// let countdowns = CountdownManager(interval: .seconds(1), queue: queue)
/// countdowns.register(resendButton, for: .seconds(60)) { button, tick, stop in
///     if tick.isFinal { button.enable() } else { button.show(tick.remaining) }
/// }
/// ```
///
/// **One ticker.** Every countdown of a manager ticks in the same batch, on one scheduled work at
/// a time. The ticker runs only while countdowns exist: the last one ending cancels the armed
/// work (no wake-ups when idle), and the next registration starts it again.
///
/// **Keyed by receiver.** A countdown belongs to a receiver object, identified by
/// `ObjectIdentifier` and held weakly. Registering the same receiver again replaces its handler
/// and deadline (never a second countdown). A new object at the address of a released receiver
/// is never taken for it.
///
/// **Deadlines, not counters.** Registering computes a deadline on the manager's
/// `CountdownClock` (by default `CLOCK_BOOTTIME`, which counts system suspension). Each tick
/// reports `deadline - now`, so the first tick after a suspend is right without any hook. Ticks
/// that fell due during a suspend, or while the queue was busy, are skipped, not delivered in a
/// burst; `CountdownTick.missedTicks` counts them.
///
/// **First tick.** Starting from idle, the ticker's grid starts at the registration: a countdown
/// of `n` intervals is called at `n-1, n-2, …, 1` intervals left, then finishes exactly on the
/// `n`th tick. A countdown that joins while the ticker runs gets its first call at the next
/// shared tick, however soon that is, with its exact time left.
///
/// **Last tick.** A countdown finishes on the first shared tick at which at most 1/64 of an
/// interval is left: at most one interval late, and never earlier than 1/64 interval before its
/// deadline. (That tolerance absorbs the microseconds between a tick and a registration made
/// just after it — for instance from a handler — which would otherwise cost a whole interval.)
///
/// **Endings.** A handler is called on each tick until its countdown ends, and then exactly once
/// more with `end` set to the reason (`CountdownTick.isFinal`):
/// - `.finished`: the final tick, remaining zero;
/// - `.stopped`: the handler set the stop flag; the call comes right after that one;
/// - `.cancelled`: `cancel(_:)` or `cancelAll()`;
/// - `.replaced`: `register` was called again for the receiver (the new handler takes over);
/// - `.shutDown(reason)`: the queue was shut down or released, so no tick can come.
///
/// The one ending without a call is the receiver's release: the manager never calls a handler for
/// a receiver that is gone, not even later in the tick that was running when it went.
/// `releasedReceiverCount` counts those endings instead.
///
/// **Threads.** Every method may be called from any thread, including from inside a handler
/// (register, cancel, stop — the manager's own included): handlers always run with no lock held.
/// Handlers and the ticker run on `queue`, one at a time, with one exception: once the queue has
/// stopped for good, the `.shutDown` calls (and a `.cancelled` or `.replaced` call the queue
/// refused) are made on the thread that learnt it — the queue's worker as its last act when the
/// shutdown itself tells the manager, otherwise the thread whose call the queue refused.
///
/// **Shutdown.** When `queue` stops for good, every countdown ends with `.shutDown(reason)`
/// (nothing traps, nothing is lost), and later `register` calls return `.refused(reason)` after
/// their handler's one `.shutDown` call.
///
/// **Lifetime.** While countdowns exist, the armed tick and a shutdown subscription on `queue`
/// keep the manager alive; with none left it holds nothing on the queue.
public final class CountdownManager: Sendable {
    /// The time between two shared ticks.
    public let interval: Duration
    let intervalNanoseconds: Int64
    let scheduler: any Scheduling
    let clock: any CountdownClock
    let state: LockedValue<State>

    /// Creates a manager whose ticker and handlers run on `queue`.
    ///
    /// - Parameters:
    ///   - interval: The time between shared ticks. Default: one second.
    ///   - queue: Where the ticker and every handler run: a `SerialQueue`, or a `VirtualScheduler`
    ///     in tests.
    ///   - clock: The clock remaining time is measured on. The default counts system suspension
    ///     (`CLOCK_BOOTTIME`). On a virtual scheduler pass a `VirtualBootClock` following it.
    /// - Precondition: `interval` is positive.
    public init(
        interval: Duration = .seconds(1),
        queue: any Scheduling,
        clock: any CountdownClock = ContinuousCountdownClock()
    ) {
        let nanoseconds = interval.saturatingNanoseconds
        guard nanoseconds > 0 else { CountdownMisuse.nonPositiveInterval(interval) }
        self.interval = interval
        self.intervalNanoseconds = nanoseconds
        self.scheduler = queue
        self.clock = clock
        self.state = LockedValue(State())
    }

    deinit {
        // Unreachable with countdowns left (the armed tick or the shutdown subscription holds the
        // manager while they exist); kept so an adapter (async sequence) never waits forever.
        let abandoned = self.state.withLock { state in
            let registrations = state.slots.map(\.registration)
            state.slots.removeAll()
            state.index.removeAll()
            return registrations
        }
        for registration in abandoned { registration.abandoned?() }
    }

    /// Starts (or restarts) the countdown of `receiver`: `handler` is called on the manager's
    /// queue at every shared tick until the countdown ends.
    ///
    /// `handler(receiver, tick, &stop)` gets the receiver (alive for the call), the time left and
    /// ticks missed, and a stop flag: set it to `true` to end the countdown at once — no tick
    /// follows, only its one terminal call, `end == .stopped`, right after. Every countdown ends
    /// with exactly one call whose `end` is set, except one whose receiver was released (no call
    /// at all). See the type's documentation for the first-tick policy and every ending.
    ///
    /// If `receiver` already has a countdown, its handler and deadline are replaced (it keeps its
    /// place in the shared ticker) and the old handler gets one last call, on the queue, with
    /// `end == .replaced`. From the queue (inside a handler) the old handler gets no tick call
    /// after that; from another thread, only a tick call the queue had already begun may still
    /// run. A `duration` of zero or less (however negative) finishes on the next shared tick; a
    /// huge one saturates at the end of time instead of wrapping. Setting the stop flag on the
    /// final call changes nothing (the countdown has already finished).
    ///
    /// Once the queue has stopped for good, no countdown starts: `handler` gets its one call,
    /// `end == .shutDown(reason)`, on the calling thread, and this returns `.refused(reason)`.
    ///
    /// Handlers share the queue and the tick: keep them short, since a slow one delays every
    /// other countdown's call.
    ///
    /// - Parameters:
    ///   - receiver: The object the countdown belongs to; held weakly.
    ///   - duration: The time from now until the countdown finishes.
    ///   - handler: Called on the manager's queue, never with a lock held.
    /// - Returns: `.started`; `.replaced` when the receiver's countdown was running; `.refused`
    ///   when the queue has stopped for good.
    /// - Complexity: O(1) amortized.
    @discardableResult
    public func register<Receiver: AnyObject & Sendable>(
        _ receiver: Receiver,
        for duration: Duration,
        handler: @escaping @Sendable (Receiver, CountdownTick, inout Bool) -> Void
    ) -> CountdownRegistration {
        let context = WorkContext.capture()  // each call runs with the registering code's context
        let registration = Registration { object, tick, stop in
            // Safe: a registration is only ever called with the receiver it was registered for.
            WorkContext.run(context) { handler(unsafeDowncast(object, to: Receiver.self), tick, &stop) }
        }
        return self.insert(receiver, duration: duration, registration: registration)
    }

    /// Ends `receiver`'s countdown. Its handler gets one last call, on the queue, with
    /// `end == .cancelled` and the time that was left — unless the receiver is released before
    /// that call is made. (If the queue refuses that call, having just stopped for good, the
    /// call is made on the calling thread before this returns.)
    ///
    /// Called from the manager's queue (a handler), no tick call of that countdown follows.
    /// Called from another thread while a tick is delivering, a tick call already started may
    /// still finish.
    ///
    /// - Returns: `true` when a running countdown was cancelled; `false` when `receiver` had
    ///   none (never registered, or already ended).
    /// - Complexity: O(1).
    @discardableResult
    public func cancel(_ receiver: AnyObject) -> Bool {
        var released: [Registration] = []
        let (cancelled, stopTicker) = self.state.withLock { state -> (EndingBatch?, TickerStop?) in
            guard let position = state.position(of: receiver, released: &released) else {
                return (nil, state.stopIfEmpty())
            }
            let slot = state.slots[position]
            let left = max(0, slot.deadline.saturatingSubtracting(self.clockNanoseconds()))
            let registration = state.removeSlot(at: position)
            state.counts.cancelled += 1
            let delivery = EndingDelivery(
                receiver: slot.receiver, registration: registration, remaining: left, end: .cancelled)
            return (state.addPendingEndings([delivery]), state.stopIfEmpty())
        }
        stopTicker?.apply()
        guard let cancelled else { return false }
        self.deliverEndings(cancelled)
        return true
    }

    /// Ends every countdown; each handler whose receiver is still alive gets one last call with
    /// `end == .cancelled`, on the queue. The ticker stops.
    ///
    /// - Returns: How many countdowns were running.
    /// - Complexity: O(n) in countdowns.
    @discardableResult
    public func cancelAll() -> Int {
        var ended: [Registration] = []
        let (cancelled, stopTicker) = self.state.withLock { state -> (EndingBatch?, TickerStop?) in
            let deliveries = state.endAll(.cancelled, now: self.clockNanoseconds(), into: &ended, keepingCapacity: true)
            return (deliveries.isEmpty ? nil : state.addPendingEndings(deliveries), state.stopIfEmpty())
        }
        stopTicker?.apply()
        if let cancelled { self.deliverEndings(cancelled) }
        return cancelled?.deliveries.count ?? 0
    }

    /// How many countdowns are running (released receivers not yet purged by a tick included).
    ///
    /// - Complexity: O(1).
    public var count: Int {
        self.state.withLock { $0.slots.count }
    }

    /// Whether `receiver` has a running countdown.
    ///
    /// - Complexity: O(1).
    public func contains(_ receiver: AnyObject) -> Bool {
        self.state.withLock { state in
            guard let position = state.index[ObjectIdentifier(receiver)] else { return false }
            return state.slots[position].receiver === receiver
        }
    }

    /// The time left on `receiver`'s countdown now, or `nil` when it has none.
    ///
    /// - Complexity: O(1).
    public func remaining(for receiver: AnyObject) -> Duration? {
        self.state.withLock { state in
            guard let position = state.index[ObjectIdentifier(receiver)],
                  state.slots[position].receiver === receiver
            else { return nil }
            return .nanoseconds(max(0, state.slots[position].deadline.saturatingSubtracting(self.clockNanoseconds())))
        }
    }

    /// How many countdowns have ended because their receiver was released: the endings that make
    /// no call. Counted when the manager finds the receiver gone (at the next tick, or when a call
    /// was due).
    ///
    /// - Complexity: O(1).
    public var releasedReceiverCount: Int {
        self.state.withLock { $0.releasedCount }
    }

    // MARK: Internals shared with the ticker and the async sequence

    /// The manager's clock in nanoseconds.
    @inline(__always)
    func clockNanoseconds() -> Int64 {
        self.clock.now().saturatingNanoseconds
    }

    func insert(
        _ receiver: any CountdownReceiver, duration: Duration, registration: Registration
    ) -> CountdownRegistration {
        let (outcome, replaced, arm) = self.state.withLock {
            state -> (CountdownRegistration, EndingBatch?, ArmAction?) in
            if let reason = state.shutDown { return (.refused(reason), nil, nil) }
            // Clock first, scheduler second: the first tick is then never early on the clock.
            let now = self.clockNanoseconds()
            // A duration of zero or less is due now (finishes on the next tick); a huge one
            // saturates: neither wraps around.
            let deadline = now.saturatingAdding(Swift.max(0, duration.saturatingNanoseconds))
            let (outcome, previous, previousDeadline) = state.insert(
                receiver, deadline: deadline, registration: registration)
            let replaced = outcome == .replaced
                ? previous.map {
                    state.addPendingEndings([
                        EndingDelivery(
                            receiver: receiver, registration: $0,
                            remaining: Swift.max(0, previousDeadline.saturatingSubtracting(now)), end: .replaced)
                    ])
                }
                : nil
            // The scheduler's clock is read only when the ticker has to start.
            let arm = state.phase == .idle
                ? state.startIfIdle(clockNow: now, schedulerNow: self.scheduler.now, interval: self.intervalNanoseconds)
                : nil
            return (outcome, replaced, arm)
        }
        if case .refused(let reason) = outcome {
            var ignored = false
            registration.handler(receiver, CountdownTick(remaining: duration.clampedRemaining, end: .shutDown(reason)), &ignored)
            return outcome
        }
        if let replaced { self.deliverEndings(replaced) }
        if let arm {
            self.arm(arm)
            // The scheduler had stopped before this call: the countdown ended with `.shutDown`.
            if !registration.isLive, let reason = self.state.withLock({ $0.shutDown }) { return .refused(reason) }
        }
        return outcome
    }

    /// Removes the countdown held by exactly `registration` (under `key`), without a call. For
    /// the stop flag (whose caller makes the `.stopped` call) and for async sequences whose
    /// consumer went away (counted as `cancelled`).
    ///
    /// - Returns: Whether it was still in the table (`false`: something else ended it).
    @discardableResult
    func remove(_ registration: Registration, key: ObjectIdentifier, as end: Counts.End) -> Bool {
        let (removed, stopTicker) = self.state.withLock { state -> (Bool, TickerStop?) in
            guard let position = state.index[key], state.slots[position].registration === registration else {
                return (false, nil)
            }
            _ = state.removeSlot(at: position)  // `registration` is still referenced by the caller
            state.counts.count(end)
            return (true, state.stopIfEmpty())
        }
        stopTicker?.apply()
        return removed
    }
}

extension Duration {
    /// The time a countdown of this duration has left at its start: never negative.
    var clampedRemaining: Duration { self < .zero ? .zero : self }
}
