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
/// **Endings.** A handler is called on each tick until exactly one of: the final tick
/// (`end == .finished`, remaining zero); a call in which it set the stop flag (its last);
/// `cancel(_:)`/`cancelAll()` (one more call with `end == .cancelled`); re-registration (the new
/// handler takes over, the old one is not called again); the receiver's release (no call at all:
/// the manager never calls a handler for a receiver that is gone).
///
/// **Threads.** Every method may be called from any thread, including from inside a handler
/// (register, cancel, stop — the manager's own included): handlers always run with no lock held.
/// Handlers and the ticker run on `queue`, one at a time.
///
/// **Lifetime.** While countdowns exist, the armed tick on `queue` keeps the manager alive; with
/// none left it holds nothing. `queue` must outlive the countdowns: shutting it down stops their
/// ticks (and later calls that need the queue trap like any work submitted after shutdown).
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
        // Only reachable with countdowns left if the queue dropped the armed tick (shutdown).
        // Adapters waiting on them (async sequences) are told, so they do not wait forever.
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
    /// ticks missed, and a stop flag: set it to `true` to end the countdown at once — that call is
    /// the last. See the type's documentation for the first-tick policy and every ending.
    ///
    /// If `receiver` already has a countdown, its handler and deadline are replaced (it keeps its
    /// place in the shared ticker). From the queue (inside a handler) the old handler is never
    /// called again; from another thread, only a tick call the queue had already begun may still
    /// run. A `duration` of zero or less finishes on the next shared tick. Setting the stop flag
    /// on the final call changes nothing (the countdown has already finished).
    ///
    /// Handlers share the queue and the tick: keep them short, since a slow one delays every
    /// other countdown's call.
    ///
    /// - Parameters:
    ///   - receiver: The object the countdown belongs to; held weakly.
    ///   - duration: The time from now until the countdown finishes.
    ///   - handler: Called on the manager's queue, never with a lock held.
    /// - Returns: `.started`, or `.replaced` when the receiver's countdown was running.
    /// - Complexity: O(1) amortized.
    @discardableResult
    public func register<Receiver: AnyObject & Sendable>(
        _ receiver: Receiver,
        for duration: Duration,
        handler: @escaping @Sendable (Receiver, CountdownTick, inout Bool) -> Void
    ) -> CountdownRegistration {
        let registration = Registration { object, tick, stop in
            // Safe: a registration is only ever called with the receiver it was registered for.
            handler(unsafeDowncast(object, to: Receiver.self), tick, &stop)
        }
        return self.insert(receiver, duration: duration, registration: registration)
    }

    /// Ends `receiver`'s countdown. Its handler gets one last call, on the queue, with
    /// `end == .cancelled` and the time that was left — unless the receiver is released before
    /// that call is made.
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
        let (cancelled, stopTicker) = self.state.withLock { state -> (CancelledDelivery?, DelayedWork?) in
            guard let position = state.position(of: receiver, released: &released) else {
                return (nil, state.stopIfEmpty())
            }
            let slot = state.slots[position]
            let left = max(0, slot.deadline &- self.clockNanoseconds())
            let registration = state.removeSlot(at: position)
            let delivery = CancelledDelivery(receiver: slot.receiver, registration: registration, remaining: left)
            return (delivery, state.stopIfEmpty())
        }
        stopTicker?.cancel()
        guard let cancelled else { return false }
        self.deliverCancelled([cancelled])
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
        let (cancelled, stopTicker) = self.state.withLock { state -> ([CancelledDelivery], DelayedWork?) in
            let now = self.clockNanoseconds()
            var deliveries: [CancelledDelivery] = []
            deliveries.reserveCapacity(state.slots.count)
            ended.reserveCapacity(state.slots.count)
            for slot in state.slots {
                slot.registration.end()
                ended.append(slot.registration)  // released after unlocking, with the slots' last references
                guard let receiver = slot.receiver else { continue }
                deliveries.append(
                    CancelledDelivery(receiver: receiver, registration: slot.registration,
                                      remaining: max(0, slot.deadline &- now)))
            }
            state.slots.removeAll(keepingCapacity: true)
            state.index.removeAll(keepingCapacity: true)
            return (deliveries, state.stopIfEmpty())
        }
        stopTicker?.cancel()
        if !cancelled.isEmpty { self.deliverCancelled(cancelled) }
        return cancelled.count
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
            return .nanoseconds(max(0, state.slots[position].deadline &- self.clockNanoseconds()))
        }
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
        let (outcome, previous, arm) = self.state.withLock { state in
            // Clock first, scheduler second: the first tick is then never early on the clock.
            let now = self.clockNanoseconds()
            let (deadline, overflow) = now.addingReportingOverflow(duration.saturatingNanoseconds)
            let (outcome, previous) = state.insert(
                receiver, deadline: overflow ? (duration > .zero ? .max : .min) : deadline,
                registration: registration)
            // The scheduler's clock is read only when the ticker has to start.
            let arm = state.phase == .idle
                ? state.startIfIdle(clockNow: now, schedulerNow: self.scheduler.now, interval: self.intervalNanoseconds)
                : nil
            return (outcome, previous, arm)
        }
        _ = consume previous  // released here, outside the lock: it may run user deinitializers
        if let arm { self.arm(arm) }
        return outcome
    }

    /// Removes the countdown held by exactly `registration` (under `key`), without a
    /// `.cancelled` call. For the stop flag and for async sequences whose consumer went away.
    func remove(_ registration: Registration, key: ObjectIdentifier) {
        let stopTicker = self.state.withLock { state -> DelayedWork? in
            guard let position = state.index[key], state.slots[position].registration === registration else {
                return nil
            }
            _ = state.removeSlot(at: position)  // `registration` is still referenced by the caller
            return state.stopIfEmpty()
        }
        stopTicker?.cancel()
    }

    private func deliverCancelled(_ deliveries: [CancelledDelivery]) {
        try! self.scheduler.execute {
            for delivery in deliveries {
                guard let receiver = delivery.receiver else { continue }
                var ignored = false
                delivery.registration.handler(
                    receiver, CountdownTick(remaining: .nanoseconds(delivery.remaining), end: .cancelled), &ignored)
            }
        }
    }
}
