import SerialCore

/// What a countdown's handler is told on each call: the time left, the ticks skipped since the
/// previous tick, and whether this is the last call.
///
/// A handler receives ticks with `end == nil` while the countdown runs, then exactly one call
/// with `end` set (`isFinal`) saying why it ended, after which it is never called again. The
/// one exception: a countdown whose receiver was released gets no call at all.
public struct CountdownTick: Sendable, Hashable, CustomStringConvertible {
    /// The time left until the countdown's deadline, never negative; zero when `end` is
    /// `.finished` (even when the final tick came up to 1/64 interval before the deadline).
    /// Computed from the deadline on the manager's `CountdownClock`, so it is right after a
    /// system suspend.
    public var remaining: Duration

    /// How many shared ticks fell due since the manager's previous tick but were not delivered —
    /// because the system was suspended or the queue was too busy. Missed ticks are skipped,
    /// never delivered in a burst. Zero on a call made outside a tick (`.cancelled`, `.replaced`,
    /// `.shutDown`).
    public var missedTicks: Int

    /// Why the countdown ended, on its last call; `nil` while it runs.
    public var end: CountdownEnd?

    /// Creates a tick value (handlers receive them; tests and adapters may build their own).
    public init(remaining: Duration, missedTicks: Int = 0, end: CountdownEnd? = nil) {
        self.remaining = remaining
        self.missedTicks = missedTicks
        self.end = end
    }

    /// Whether this is the handler's last call (`end` is set).
    public var isFinal: Bool { self.end != nil }

    /// For logs: "4.0 seconds left, 2 missed, finished".
    public var description: String {
        var text = "\(self.remaining) left"
        if self.missedTicks > 0 { text += ", \(self.missedTicks) missed" }
        if let end = self.end { text += ", \(end)" }
        return text
    }
}

/// How a countdown ended: the reason its handler's last call carries.
///
/// Every ending calls the handler once more with its reason, except the receiver's release:
/// there is no one left to tell (the manager counts those in `releasedReceiverCount`).
public enum CountdownEnd: Sendable, Hashable, CustomStringConvertible {
    /// The deadline passed: `remaining` is zero.
    case finished
    /// The handler set the stop flag; this call comes right after that one, in the same tick,
    /// with the same `remaining`.
    case stopped
    /// `cancel(_:)` or `cancelAll()` ended it; `remaining` is the time that was left then.
    case cancelled
    /// `register` was called again for the same receiver; the new handler has taken over.
    /// `remaining` is the time the old countdown had left.
    case replaced
    /// The manager's scheduler stopped for good (its queue was shut down or released), so no
    /// tick can come; `remaining` is the time that was left then.
    case shutDown(SchedulingError)

    /// The reason in a few words, for logs.
    public var description: String {
        switch self {
        case .finished: return "finished"
        case .stopped: return "stopped"
        case .cancelled: return "cancelled"
        case .replaced: return "replaced"
        case .shutDown(let reason): return "ended: \(reason)"
        }
    }
}

/// What `register` did.
public enum CountdownRegistration: Sendable, Hashable {
    /// No countdown of this receiver was running; a new one started.
    case started
    /// A countdown of this receiver was running; its handler and deadline were replaced. The old
    /// handler gets one last call, with `end == .replaced`, and no tick after it.
    case replaced
    /// The manager's scheduler had stopped for good: no countdown runs. The handler got its one
    /// call, `end == .shutDown(reason)`, on the calling thread before `register` returned.
    case refused(SchedulingError)
}
