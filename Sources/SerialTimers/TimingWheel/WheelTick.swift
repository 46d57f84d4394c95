/// A position on a `TimingWheel`'s time line, counted in ticks from the wheel's origin.
///
/// The wheel gives ticks no length: the driver decides what one tick means (a
/// `TimerService` maps them to a `Duration`). Ticks only move forward.
public struct WheelTick: Comparable, Hashable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// Ticks since the origin.
    public var rawValue: UInt64

    /// The tick `rawValue` ticks after the origin.
    @inlinable
    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// A tick written as an integer literal: `wheel.insert(x, at: 5)`.
    @inlinable
    public init(integerLiteral value: UInt64) {
        self.rawValue = value
    }

    /// The last tick a wheel's time can reach (`UInt64.max - 1`, so "the tick after now" always exists).
    public static let latest = WheelTick(UInt64.max - 1)

    /// The tick after this one.
    @inlinable
    public var next: WheelTick { WheelTick(self.rawValue + 1) }

    /// Whether `lhs` is the earlier tick.
    @inlinable
    public static func < (lhs: WheelTick, rhs: WheelTick) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// `tick N`, for logs.
    public var description: String { "tick \(self.rawValue)" }
}
