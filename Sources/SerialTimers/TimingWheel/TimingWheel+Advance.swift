extension TimingWheel {
    /// The next tick at which `advance` has work: the first tick of the earliest non-empty
    /// slot, or `nil` when the wheel is empty.
    ///
    /// It is never later than the earliest deadline, and equals it when that slot is on
    /// level 0. On a higher level it is the slot's cascade point, where its entries move down
    /// to finer levels (and those due exactly then expire). A driver that wakes at
    /// `nextExpiry`, advances, and asks again, never misses a deadline and never polls empty
    /// ticks: a timer `d` ticks away costs at most one wake-up per level on its way down,
    /// and typically only one when it is due.
    ///
    /// - Complexity: O(levels): one bitmap test per level, then a trailing-zero count.
    @inlinable
    public var nextExpiry: WheelTick? {
        guard let (level, slot) = self.earliestOccupiedSlot() else { return nil }
        return WheelTick(WheelLevel.start(level: level, slot: slot, now: self.elapsed))
    }

    /// The earliest deadline among waiting elements, or `nil` when the wheel is empty.
    ///
    /// - Complexity: O(levels) when the earliest slot is on level 0; otherwise also a walk of
    ///   that one slot's list. Drivers that arm wake-ups should prefer `nextExpiry`.
    public var nextDeadline: WheelTick? {
        guard let (level, slot) = self.earliestOccupiedSlot() else { return nil }
        if level == 0 { return WheelTick(WheelLevel.start(level: 0, slot: slot, now: self.elapsed)) }
        var earliest = UInt64.max
        var index = self.heads[level * WheelLevel.slotsPerLevel + slot]
        while index >= 0 {
            earliest = min(earliest, self.nodes[Int(index)].deadline)
            index = self.nodes[Int(index)].next
        }
        return WheelTick(earliest)
    }

    /// Moves the wheel to `tick` and returns every element due at or before it, in deadline
    /// order (insertion order within a tick). Moving to the past or the present does nothing.
    ///
    /// - Complexity: O(expired + cascaded + levels × slots processed). Empty ticks cost
    ///   nothing: the walk jumps from one occupied slot to the next through the bitmaps.
    ///   Each entry cascades at most once per level on its way down.
    @inlinable
    public mutating func advance(to tick: WheelTick) -> [Element] {
        var expired: [Element] = []
        self.advance(to: tick, into: &expired)
        return expired
    }

    /// `advance(to:)` appending the expired elements to `expired`, so a driver can reuse one
    /// buffer and not allocate per advance.
    @inlinable
    public mutating func advance(to tick: WheelTick, into expired: inout [Element]) {
        let target = min(tick.rawValue, WheelTick.latest.rawValue)
        guard target > self.elapsed else { return }
        var processed = false
        while let (level, slot) = self.earliestOccupiedSlot() {
            let start = WheelLevel.start(level: level, slot: slot, now: self.elapsed)
            guard start <= target else { break }
            processed = true
            // Stand at the slot's first tick: the lower levels are all empty now (an occupied
            // lower slot would have started earlier), so cascading entries keep their order.
            self.elapsed = start
            let flat = level * WheelLevel.slotsPerLevel + slot
            var index = self.heads[flat]
            self.heads[flat] = -1
            self.tails[flat] = -1
            self.occupied[level] &= ~(1 << UInt64(slot))
            while index >= 0 {
                let next = self.nodes[Int(index)].next
                if self.nodes[Int(index)].deadline <= start {
                    self.storedCount -= 1
                    expired.append(self.freeNode(Int(index)))
                } else {
                    self.link(index)  // to a lower level: the deadline is within this slot's span
                }
                index = next
            }
        }
        self.elapsed = target
        // A catch-up over empty ticks moves nothing; checking the whole wheel there (when
        // internal checks are on) would make every schedule O(n).
        if processed { self._checkInvariants() }
    }

    /// The lowest set bit of the lowest non-empty level, which is the earliest slot.
    @inlinable @inline(__always)
    func earliestOccupiedSlot() -> (level: Int, slot: Int)? {
        for level in 0..<WheelLevel.count {
            let bits = self.occupied[level]
            if bits != 0 { return (level, bits.trailingZeroBitCount) }
        }
        return nil
    }
}
