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
    /// - Complexity: O(retry).
    public func delay(beforeRetry retry: Int) -> Duration {
        var nanoseconds = Double(self.initial.saturatingNanoseconds)
        let cap = Double(self.maximum.saturatingNanoseconds)
        var step = 1
        while step < retry && nanoseconds < cap {
            nanoseconds *= self.multiplier
            step += 1
        }
        return .nanoseconds(Int64(min(nanoseconds, cap)))
    }
}
