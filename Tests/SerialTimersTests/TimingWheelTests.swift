import SerialTimers
import Testing

@Suite("TimingWheel")
struct TimingWheelTests {
    @Test func anElementComesOutAtItsDeadlineTickAndNotBefore() {
        var wheel = TimingWheel<String>()
        wheel.insert("a", at: 10)
        #expect(wheel.advance(to: 9) == [])
        #expect(wheel.count == 1)
        #expect(wheel.advance(to: 10) == ["a"])
        #expect(wheel.isEmpty)
        #expect(wheel.currentTick == 10)
    }

    @Test func advanceReturnsDeadlineOrderAcrossLevelsAndInsertionOrderWithinATick() {
        var wheel = TimingWheel<String>()
        wheel.insert("far", at: 300_000)
        wheel.insert("mid-1", at: 5_000)
        wheel.insert("near", at: 3)
        wheel.insert("mid-2", at: 5_000)
        wheel.insert("same-tick-later", at: 3)
        #expect(wheel.advance(to: 1_000_000) == ["near", "same-tick-later", "mid-1", "mid-2", "far"])
        wheel._checkInvariants()
    }

    @Test func insertionOrderWithinATickSurvivesCascading() {
        var wheel = TimingWheel<Int>()
        wheel.insert(1, at: 100)       // level 1 at tick 0
        _ = wheel.advance(to: 70)      // cascades slot 64..<128: 1 moves to level 0
        wheel.insert(2, at: 100)       // level 0 directly, after 1
        wheel.insert(0, at: 99)
        #expect(wheel.advance(to: 100) == [0, 1, 2])
    }

    @Test func advanceToThePastOrPresentDoesNotMoveTime() {
        var wheel = TimingWheel<Int>(currentTick: 50)
        wheel.insert(1, at: 60)
        #expect(wheel.advance(to: 40) == [])
        #expect(wheel.advance(to: 50) == [])
        #expect(wheel.currentTick == 50)
        #expect(wheel.nextExpiry == 60)
    }

    @Test func aDeadlineAtOrBeforeNowIsDueAtTheNextTick() {
        var wheel = TimingWheel<String>(currentTick: 100)
        let handle = wheel.insert("late", at: 3)
        wheel.insert("now", at: 100)
        #expect(wheel.deadline(of: handle) == 101)
        #expect(wheel.nextExpiry == 101)
        #expect(wheel.advance(to: 101) == ["late", "now"])
    }

    @Test func cancelRemovesAtOnceAndReturnsTheElement() {
        var wheel = TimingWheel<String>()
        let a = wheel.insert("a", at: 10)
        wheel.insert("b", at: 10)
        #expect(wheel.cancel(a) == "a")
        #expect(!wheel.contains(a))
        #expect(wheel.count == 1)
        #expect(wheel.advance(to: 10) == ["b"])
    }

    @Test func doubleCancelAndCancelAfterExpiryReturnNil() {
        var wheel = TimingWheel<String>()
        let a = wheel.insert("a", at: 5)
        let b = wheel.insert("b", at: 6)
        #expect(wheel.cancel(a) == "a")
        #expect(wheel.cancel(a) == nil)
        #expect(wheel.advance(to: 6) == ["b"])
        #expect(wheel.cancel(b) == nil)
        #expect(wheel.deadline(of: b) == nil)
    }

    @Test func aStaleHandleNeverReachesTheElementThatReusedItsNode() {
        var wheel = TimingWheel<String>()
        let old = wheel.insert("old", at: 5)
        #expect(wheel.cancel(old) == "old")
        let new = wheel.insert("new", at: 7)  // reuses the freed node
        #expect(wheel.cancel(old) == nil)
        #expect(wheel.contains(new))
        #expect(wheel.advance(to: 7) == ["new"])
    }

    @Test func cancellingTheLastEntryOfASlotClearsItsBit() {
        var wheel = TimingWheel<Int>()
        let near = wheel.insert(1, at: 3)
        wheel.insert(2, at: 5_000)
        #expect(wheel.nextExpiry == 3)
        wheel.cancel(near)
        #expect(wheel.nextExpiry == 4_096, "the level-2 slot of 5,000 starts at 4,096")
        #expect(wheel.nextDeadline == 5_000)
        wheel._checkInvariants()
    }

    @Test func nextExpiryIsNilWhenEmptyAndNeverLaterThanTheEarliestDeadline() {
        var wheel = TimingWheel<Int>()
        #expect(wheel.nextExpiry == nil)
        #expect(wheel.nextDeadline == nil)
        wheel.insert(1, at: 1_000_000)
        let expiry = wheel.nextExpiry!
        #expect(expiry <= 1_000_000)
        #expect(expiry > 0)
        // Driving the wheel by nextExpiry reaches the deadline in a few steps, not a million.
        var steps = 0
        var fired: [Int] = []
        while let next = wheel.nextExpiry {
            fired += wheel.advance(to: next)
            steps += 1
        }
        #expect(fired == [1])
        #expect(wheel.currentTick == 1_000_000)
        #expect(steps <= WheelLevel.count)
    }

    @Test func theFarthestDeadlinesWork() {
        var wheel = TimingWheel<String>()
        wheel.insert("end", at: WheelTick(UInt64.max))
        wheel.insert("latest", at: WheelTick.latest)
        wheel._checkInvariants()
        #expect(wheel.advance(to: WheelTick(UInt64.max)) == ["latest"], "time stops at WheelTick.latest")
        #expect(wheel.count == 1)
    }

    @Test func removeAllEmptiesTheWheelAndKeepsTime() {
        var wheel = TimingWheel<Int>(currentTick: 7)
        for value in 0..<100 { wheel.insert(value, at: WheelTick(UInt64(value * 997 + 8))) }
        let removed = wheel.removeAll()
        #expect(removed.sorted() == Array(0..<100))
        #expect(wheel.isEmpty)
        #expect(wheel.nextExpiry == nil)
        #expect(wheel.currentTick == 7)
        wheel.insert(5, at: 9)
        #expect(wheel.advance(to: 9) == [5])
    }

    @Test(arguments: [1, 63, 64, 65, 4_095, 4_096, 4_097, 262_143, 262_144, 16_777_216])
    func anElementAtAnyDistanceFiresExactlyAtItsTick(distance: UInt64) {
        for start: UInt64 in [0, 1, 63, 64, 4_095, 123_456] {
            var wheel = TimingWheel<UInt64>(currentTick: WheelTick(start))
            wheel.insert(start + distance, at: WheelTick(start + distance))
            #expect(wheel.advance(to: WheelTick(start + distance - 1)) == [], "start \(start), distance \(distance)")
            #expect(wheel.advance(to: WheelTick(start + distance)) == [start + distance])
        }
    }
}
