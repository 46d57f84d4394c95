/// Which successful responses a `Poller` reports as updates: a response is reported when this
/// rule says it differs from the last value reported in the session (the first one always is).
///
/// - `.equality`: compare with `==` (for `Equatable` values; the usual choice).
/// - `.isSame { a, b in … }`: your own comparison, for values that are not `Equatable` or
///   whose `==` looks at more than the job's state (a timestamp, a message).
/// - `.everyResponse`: every successful response is an update.
///
/// The rule is a required argument of `Poller.init`, not a default: the poller promises updates
/// only on change, and what a change is depends on the value, so the caller says it once.
/// A `progress` measure, when given, filters further (see `Poller.init`).
public struct PollChangeDetection<Value: Sendable>: Sendable {
    /// `nil`: every response is a change.
    let isSame: (@Sendable (Value, Value) -> Bool)?

    /// Every successful response is reported, equal to the last one or not.
    public static var everyResponse: PollChangeDetection { PollChangeDetection(isSame: nil) }

    /// A response is reported unless `isSame(lastReported, response)` is `true`.
    ///
    /// `isSame` runs outside the poller's lock, on the thread that delivered the response.
    public static func isSame(_ isSame: @escaping @Sendable (Value, Value) -> Bool) -> PollChangeDetection {
        PollChangeDetection(isSame: isSame)
    }

    /// Whether `value` is a change from `lastReported` (`nil` before the session's first update).
    func isChange(_ value: Value, from lastReported: Value?) -> Bool {
        guard let lastReported, let isSame = self.isSame else { return true }
        return !isSame(lastReported, value)
    }
}

extension PollChangeDetection where Value: Equatable {
    /// A response is reported unless it is `==` to the last reported value.
    public static var equality: PollChangeDetection { PollChangeDetection(isSame: { $0 == $1 }) }
}
