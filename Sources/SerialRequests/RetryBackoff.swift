/// How long a request waits before it is sent again after a retryable failure: `initial` before
/// the first retry, multiplied by `multiplier` for each further one, never more than `maximum`.
/// Deterministic (no jitter), so virtual-time tests can state exact instants.
public struct RetryBackoff: Sendable, Hashable {
    /// The wait before the first retry.
    public var initial: Duration
    /// The growth factor per retry (1 for a constant wait).
    public var multiplier: Double
    /// The longest wait.
    public var maximum: Duration

    /// A backoff of `initial`, growing by `multiplier`, capped at `maximum`.
    public init(initial: Duration, multiplier: Double = 2, maximum: Duration) {
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
    }

    /// The wait before retry number `retry` (1 for the first).
    ///
    /// Saturating: it never traps, whatever the values. Negative durations count as zero, a
    /// zero wait stays zero whatever the factor (even infinite), and a wait past `Int64.max`
    /// nanoseconds is `Int64.max` nanoseconds (about 292 years).
    ///
    /// - Complexity: O(min(retry, 64 + log of the factor's reach)).
    public func delay(beforeRetry retry: Int) -> Duration {
        let cap = max(0, self.maximum.saturatingNanoseconds)
        var nanoseconds = Double(min(max(0, self.initial.saturatingNanoseconds), cap))
        let factor = self.multiplier.isNaN ? 1 : max(1, self.multiplier)
        var step = 1
        while step < retry && nanoseconds > 0 && nanoseconds < Double(cap) {
            nanoseconds *= factor
            step += 1
        }
        // Double(Int64.max) rounds up to 2^63, which Int64 cannot hold: compare before converting.
        guard nanoseconds < Double(cap) else { return .nanoseconds(cap) }
        return .nanoseconds(Int64(nanoseconds))
    }
}
