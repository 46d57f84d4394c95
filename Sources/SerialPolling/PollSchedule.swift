import SerialCore

/// The arithmetic of a poll's timing, pure: no clock, no state, randomness passed in.
///
/// - `nextStart`: cadence without overlap or idle gap.
/// - `errorDelay`: exponential backoff with full jitter, or a server hint, within bounds.
/// - `attemptDeadline`: a per-attempt timeout clamped to the overall deadline.
enum PollSchedule {
    /// When the next query starts after a response: `max(start + interval, response)`, pushed
    /// to at least `response + errorDelay` after an error.
    ///
    /// The interval is a floor between starts even after errors: a retry never comes sooner
    /// than the regular cadence would.
    static func nextStart(
        previousStart: MonotonicInstant,
        response: MonotonicInstant,
        interval: Duration,
        errorDelay: Duration = .zero
    ) -> MonotonicInstant {
        max(previousStart.advanced(by: interval), response.advanced(by: errorDelay))
    }

    /// The largest delay after `consecutiveErrors` errors in a row (1 for the first):
    /// `min(maximum, minimum × 2^(consecutiveErrors − 1))`, saturating instead of overflowing.
    static func backoffCeiling(consecutiveErrors: Int, minimum: Duration, maximum: Duration) -> Duration {
        if consecutiveErrors < 1 {
            PollingMisuse.internalInconsistency("backoffCeiling: consecutiveErrors \(consecutiveErrors) < 1")
        }
        let minimumNanoseconds = minimum.saturatingNanoseconds
        let maximumNanoseconds = maximum.saturatingNanoseconds
        let shift = consecutiveErrors - 1
        guard minimumNanoseconds > 0 else { return .zero }
        // Past 62 doublings any positive minimum overflows Int64: the ceiling is the maximum.
        if shift >= 62 { return maximum }
        let (scaled, overflow) = minimumNanoseconds.multipliedReportingOverflow(by: Int64(1) << Int64(shift))
        if overflow || scaled >= maximumNanoseconds { return maximum }
        return .nanoseconds(scaled)
    }

    /// The delay before retrying after `consecutiveErrors` errors in a row.
    ///
    /// With a server `hint`: the hint clamped to `[minimum, maximum]` (no jitter: the server
    /// chose the time). Without: uniform ("full jitter") in `[minimum, backoffCeiling]`, so the
    /// first retry waits exactly `minimum` and later ones spread over a doubling window, which
    /// keeps many pollers from retrying in lock-step.
    static func errorDelay<Random: RandomNumberGenerator>(
        consecutiveErrors: Int,
        minimum: Duration,
        maximum: Duration,
        hint: Duration?,
        using random: inout Random
    ) -> Duration {
        if let hint {
            return min(max(hint, minimum), maximum)
        }
        let ceiling = self.backoffCeiling(consecutiveErrors: consecutiveErrors, minimum: minimum, maximum: maximum)
        let low = minimum.saturatingNanoseconds
        let high = ceiling.saturatingNanoseconds
        guard high > low else { return minimum }
        return .nanoseconds(Int64.random(in: low...high, using: &random))
    }

    /// When an attempt started at `start` times out: `start + attemptTimeout`, but never after
    /// the overall `deadline` (the last attempt is shortened to fit it). `nil` when neither is set.
    static func attemptDeadline(
        start: MonotonicInstant,
        attemptTimeout: Duration?,
        deadline: MonotonicInstant?
    ) -> MonotonicInstant? {
        switch (attemptTimeout.map { start.advanced(by: $0) }, deadline) {
        case (nil, nil): return nil
        case (let own?, nil): return own
        case (nil, let overall?): return overall
        case (let own?, let overall?): return min(own, overall)
        }
    }
}
