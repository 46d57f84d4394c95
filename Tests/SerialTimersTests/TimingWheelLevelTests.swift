import SerialTimers
import Testing

/// The slot and level arithmetic, swept over every slot, level and bit position.
@Suite("TimingWheel level math")
struct TimingWheelLevelTests {
    @Test func elevenLevelsOf64SlotsCoverEveryTick() {
        #expect(WheelLevel.slotsPerLevel == 64)
        #expect(WheelLevel.count == 11)
        #expect(WheelLevel.count * WheelLevel.bits >= UInt64.bitWidth)
    }

    @Test(arguments: 0..<64)
    func aDeadlineThatDiffersFromNowOnlyInBitGoesToThatBitsLevel(bit: Int) {
        let now: UInt64 = 0
        let deadline: UInt64 = 1 << UInt64(bit)
        #expect(WheelLevel.level(for: deadline, now: now) == bit / 6)
    }

    @Test(arguments: 0..<64)
    func level0SlotIsTheLowDigit(slot: Int) {
        let now: UInt64 = 64 * 1_000  // digit 0 of now is 0
        let deadline = now + UInt64(slot)
        if slot == 0 { return }  // equal to now: never stored
        #expect(WheelLevel.level(for: deadline, now: now) == 0)
        #expect(WheelLevel.slot(for: deadline, level: 0) == slot)
        #expect(WheelLevel.start(level: 0, slot: slot, now: now) == deadline)
    }

    @Test(arguments: 0..<11, [1, 7, 63])
    func slotStartKeepsTheDigitsAboveTheLevelAndZeroesTheOnesBelow(level: Int, slot: Int) {
        let now: UInt64 = 0x0123_4567_89AB_CDEF & ~((1 << UInt64(min(63, (level + 1) * 6))) - 1)
        let start = WheelLevel.start(level: level, slot: slot, now: now)
        let shift = UInt64(level * 6)
        #expect(start & ((1 << shift) - 1) == 0, "digits below level \(level) must be zero")
        #expect(WheelLevel.slot(for: start, level: level) == slot & (level == 10 ? 15 : 63))
        if level < 10 {
            let aboveMask = ~((UInt64(1) << UInt64((level + 1) * 6)) - 1)
            #expect(start & aboveMask == now & aboveMask)
        }
    }

    @Test(arguments: 1..<11)
    func anEntryOneSlotSpanAwayAtALevelBoundaryGoesToThatLevel(level: Int) {
        let span = WheelLevel.slotSpan(level: level)
        let now = span - 1  // all lower digits at their maximum
        #expect(WheelLevel.level(for: span, now: now) == level)
        #expect(WheelLevel.slot(for: span, level: level) == 1)
        #expect(WheelLevel.start(level: level, slot: 1, now: now) == span)
    }

    @Test func theTopLevelHoldsTheLastTick() {
        let last = UInt64.max
        #expect(WheelLevel.level(for: last, now: 0) == 10)
        #expect(WheelLevel.slot(for: last, level: 10) == 15)
        #expect(WheelLevel.start(level: 10, slot: 15, now: 0) == 15 << 60)
    }
}
