/// What a countdown's handler is told on each call: the time left, the ticks skipped since the
/// previous tick, and whether this is the last call.
///
/// A handler receives ticks with `end == nil` while the countdown runs, then at most one call
/// with `end` set (`isFinal`), after which it is never called again.
public struct CountdownTick: Sendable, Hashable, CustomStringConvertible {
    /// The time left until the countdown's deadline, never negative; zero when `end` is
    /// `.finished` (even when the final tick came up to 1/64 interval before the deadline).
    /// Computed from the deadline on the manager's `CountdownClock`, so it is right after a
    /// system suspend.
    public var remaining: Duration

    /// How many shared ticks fell due since the manager's previous tick but were not delivered —
    /// because the system was suspended or the queue was too busy. Missed ticks are skipped,
    /// never delivered in a burst. Zero on a `.cancelled` call.
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

/// How a countdown ended, when its handler is told.
///
/// Three other endings call the handler no more: setting the stop flag (the handler already
/// knows: the call in which it set the flag was its last), the receiver's release (there is no
/// one left to tell), and re-registering the receiver (`register` returns `.replaced`; the new
/// handler takes over the countdown).
public enum CountdownEnd: Sendable, Hashable {
    /// The deadline passed: `remaining` is zero.
    case finished
    /// `cancel(_:)` or `cancelAll()` ended it; `remaining` is the time that was left then.
    case cancelled
}

/// What `register` did.
public enum CountdownRegistration: Sendable, Hashable {
    /// No countdown of this receiver was running; a new one started.
    case started
    /// A countdown of this receiver was running; its handler and deadline were replaced, and the
    /// old handler will not be called again.
    case replaced
}
