/// A point on the monotonic clock (`CLOCK_MONOTONIC` for real queues; any origin for virtual
/// schedulers), in whole nanoseconds.
///
/// Arithmetic saturates: an instant never wraps around, so "very far in the future" stays so.
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin.
    public var nanoseconds: UInt64

    /// An instant `nanoseconds` after the clock's origin.
    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// The current reading of `CLOCK_MONOTONIC`.
    ///
    /// - Complexity: O(1); a vDSO call, no system call on common kernels.
    @inline(__always)
    public static func now() -> MonotonicInstant {
        MonotonicInstant(nanoseconds: ClockReads.monotonicNanoseconds())
    }

    /// The latest representable instant; used for "never".
    public static let distantFuture = MonotonicInstant(nanoseconds: .max)

    /// This instant moved by `duration` (negative durations move it back), saturating at the ends.
    public func advanced(by duration: Duration) -> MonotonicInstant {
        let delta = duration.saturatingNanoseconds
        if delta >= 0 {
            let (sum, overflow) = self.nanoseconds.addingReportingOverflow(UInt64(delta))
            return MonotonicInstant(nanoseconds: overflow ? .max : sum)
        }
        let magnitude = delta.magnitude
        return MonotonicInstant(nanoseconds: self.nanoseconds > magnitude ? self.nanoseconds - magnitude : 0)
    }

    /// The signed duration from this instant to `other`.
    public func duration(to other: MonotonicInstant) -> Duration {
        if other.nanoseconds >= self.nanoseconds {
            return .nanoseconds(Int64(clamping: other.nanoseconds - self.nanoseconds))
        }
        return .nanoseconds(-Int64(clamping: self.nanoseconds - other.nanoseconds))
    }

    /// Whether `lhs` comes before `rhs` on the monotonic clock.
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// The instant `rhs` after `lhs`, saturating at the ends of the clock (as `advanced(by:)`).
    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        lhs.advanced(by: rhs)
    }

    /// The instant `rhs` before `lhs`, saturating at the ends of the clock.
    public static func - (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        lhs.advanced(by: .zero - rhs)
    }

    /// The time from `rhs` to `lhs` (negative when `lhs` is earlier).
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        rhs.duration(to: lhs)
    }

    /// The instant in seconds since the clock's origin, for logs and test messages.
    public var description: String {
        let seconds = self.nanoseconds / 1_000_000_000
        let fraction = self.nanoseconds % 1_000_000_000
        let padded = String(fraction)
        return "\(seconds).\(String(repeating: "0", count: 9 - padded.count))\(padded)s"
    }
}

extension Duration {
    /// This duration in whole nanoseconds, rounded toward zero and clamped to `Int64`.
    public var saturatingNanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}
