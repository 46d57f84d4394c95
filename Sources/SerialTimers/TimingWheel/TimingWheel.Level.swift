/// The slot and level arithmetic of `TimingWheel`, kept apart so tests can sweep it.
///
/// Level `L` has 64 slots of 64^L ticks each, so it spans 64^(L+1) ticks:
///
/// | level | one slot        | whole level      |
/// |-------|-----------------|------------------|
/// | 0     | 1 tick          | 64 ticks         |
/// | 1     | 64 ticks        | 4,096 ticks      |
/// | 2     | 4,096 ticks     | 262,144 ticks    |
/// | …     | …               | …                |
/// | 10    | 2^60 ticks      | all of `UInt64`  |
///
/// Eleven levels cover every `UInt64` tick, so no deadline is too far and there is no
/// overflow list. Read a tick as eleven base-64 digits, digit `L` being bits `6L..<6L+6`:
/// an entry lives at the level of the highest digit in which its deadline differs from the
/// wheel's current tick, in the slot given by that digit of its deadline. All digits above
/// that level are then equal to the current tick's, and the slot's digit is greater, so
/// every occupied slot starts in the future, and every occupied slot of a lower level
/// starts before every occupied slot of a higher one. That is why the next slot to process
/// is simply the lowest set bit of the lowest non-empty level: no walking of empty ticks.
@usableFromInline
package enum WheelLevel {
    /// Bits of a tick per level: 64 slots, one `UInt64` occupancy bitmap.
    @usableFromInline package static let bits = 6
    /// Slots per level; a power of two so a slot is a shift and a mask.
    @usableFromInline package static let slotsPerLevel = 1 << bits
    /// Levels needed to cover all 64 bits of a tick (the top one uses 4 of its 6 bits).
    @usableFromInline package static let count = (UInt64.bitWidth + bits - 1) / bits

    /// The level for an entry due at `deadline` while the wheel stands at `now` (`deadline > now`).
    @inlinable @inline(__always)
    package static func level(for deadline: UInt64, now: UInt64) -> Int {
        // `| 63` keeps the result at level 0 when only the lowest digit differs (and avoids clz of 0).
        let highestDifferentBit = UInt64.bitWidth - 1 - ((now ^ deadline) | UInt64(slotsPerLevel - 1)).leadingZeroBitCount
        return highestDifferentBit / bits
    }

    /// The slot of `deadline` on `level`: its digit number `level`.
    @inlinable @inline(__always)
    package static func slot(for deadline: UInt64, level: Int) -> Int {
        Int(truncatingIfNeeded: (deadline >> UInt64(level * bits)) & UInt64(slotsPerLevel - 1))
    }

    /// The first tick covered by `slot` of `level`, while the wheel stands at `now`.
    @inlinable @inline(__always)
    package static func start(level: Int, slot: Int, now: UInt64) -> UInt64 {
        let shift = (level + 1) * bits
        // Keep the digits above this level from `now`; the top level has none above it.
        let above: UInt64 = shift >= UInt64.bitWidth ? 0 : now & ~((1 << UInt64(shift)) - 1)
        return above | (UInt64(slot) << UInt64(level * bits))
    }

    /// How many ticks one slot of `level` spans (saturating at the top level's 2^60).
    package static func slotSpan(level: Int) -> UInt64 {
        1 << UInt64(level * bits)
    }
}
