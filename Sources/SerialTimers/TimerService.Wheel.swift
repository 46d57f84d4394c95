import SerialCore

extension TimerService {
    /// The wheel a `TimerService` keeps its pending timers in: `TimingWheel`'s levels, slots and
    /// bitmaps (`WheelLevel` says how a deadline maps to them), but intrusive. Each slot is a
    /// circular doubly-linked list threaded through the timers themselves, from the slot's
    /// `Anchor` back to it, so a timer needs no node of its own (10M pending timers are 10M
    /// 64-byte objects and nothing else), and unlinking one needs no slot number: a timer whose
    /// two neighbours are the same object was the slot's last, and that object is the anchor.
    ///
    /// Ownership: the wheel holds one retain of each timer it holds, taken by `insert`, given
    /// back by `remove`, handed to the caller by `advance` and `removeAll`, and released by
    /// `deinit` for whatever is left. A class for that reason (a struct's copies would share
    /// those retains). Not thread-safe: the service uses it under its lock.
    ///
    /// A timer is filed at the tick its deadline rounds up to (`TickClock.tickAtOrAfter`), or
    /// at `currentTick + 1` when that has passed; `advance` expires it at that tick. The
    /// deadline is read again when a timer cascades to a finer level, so moving a timer is
    /// changing its deadline and filing it again (`move`).
    ///
    /// - Invariant: every held timer is due after `currentTick` and sits in a slot that starts
    ///   no later than its due tick: the slot its due tick maps to from `currentTick`, or an
    ///   earlier one after its deadline was pushed back (`reschedule`); a level's bitmap bit is
    ///   set exactly when that slot's list is non-empty; `count` is the number of held timers. `checkInvariants()` walks it
    ///   all in builds with `SERIAL_INTERNAL_CHECKS`.
    final class Wheel {
        let clock: TickClock
        // Every access is under the service's lock: runtime exclusivity checks would only cost.
        /// The tick the wheel stands at: everything due at or before it has been expired.
        @exclusivity(unchecked) private(set) var currentTick: UInt64 = 0
        /// How many timers the wheel holds.
        @exclusivity(unchecked) private(set) var count = 0
        /// Per `level * 64 + slot`: the slot list's anchor, made the first time the slot is used.
        /// Unmanaged (one retain each, given back by `deinit`): the hot paths pass anchors around
        /// without retaining them.
        @exclusivity(unchecked) private var anchors: [Unmanaged<Anchor>?]
        /// Per level: bit `s` set exactly when slot `s` of that level is non-empty.
        @exclusivity(unchecked) private var occupied: [UInt64]
        /// Per `level * 64 + slot`, while the slot is non-empty: at most the earliest `latestTick`
        /// of its timers (exact until one leaves or is pushed back). `nextWakeTick` reads it.
        @exclusivity(unchecked) private var slotLatest: [UInt64]

        init(clock: TickClock) {
            self.clock = clock
            self.anchors = Array(repeating: nil, count: WheelLevel.count * WheelLevel.slotsPerLevel)
            self.occupied = Array(repeating: 0, count: WheelLevel.count)
            self.slotLatest = Array(repeating: .max, count: WheelLevel.count * WheelLevel.slotsPerLevel)
        }

        deinit {
            self.removeAll { _ in }
            for anchor in self.anchors { anchor?.release() }
        }

        var isEmpty: Bool { self.count == 0 }

        /// Holds `timer` until its deadline's tick. The timer must not be in the wheel.
        ///
        /// - Returns: The last tick of its window (`Timer.latestTick`): the latest wake-up it needs.
        /// - Complexity: O(1), no allocation once its slot has been used before.
        @discardableResult
        func insert(_ timer: Timer) -> UInt64 {
            assert(!timer.isWaiting, "internal inconsistency: inserting a timer that is in the wheel")
            self.count += 1
            return self.link(Unmanaged.passRetained(timer), at: self.dueTick(of: timer))
        }

        /// Takes `timer` out of the wheel; `false` when it was not in it.
        ///
        /// - Complexity: O(1).
        @discardableResult
        func remove(_ timer: Timer) -> Bool {
            guard timer.isWaiting else { return false }
            self.unlink(timer)
            self.count -= 1
            Unmanaged.passUnretained(timer).release()  // the wheel's retain
            return true
        }

        /// Gives a timer in the wheel a new deadline, earlier or later, and a new tolerance when
        /// `tolerance` is not `nil` (a `TolerantTimer` only; `.max` for the default).
        ///
        /// A later deadline (whose window ends no earlier) is only written down: the timer stays
        /// where it is, and when its slot comes up, `advance` reads the deadline, finds it not due
        /// and files it again further on. Pushing an idle timeout back on every packet touches
        /// only the timer (not its neighbours), and a timer pushed back many times moves once.
        /// An earlier deadline or window end moves the timer at once, so it is never late.
        ///
        /// - Returns: Whether the timer moved (its window now ends earlier): only then may the
        ///   service need an earlier wake-up.
        /// - Complexity: O(1), no allocation once its new slot has been used before.
        @discardableResult
        func reschedule(_ timer: Timer, to deadline: MonotonicInstant, tolerance: UInt64? = nil) -> Bool {
            assert(timer.isWaiting, "internal inconsistency: moving a timer that is not in the wheel")
            let oldDue = self.dueTick(of: timer)
            let oldLatest = timer.latestTick(due: oldDue, clock: self.clock)
            timer.deadline = deadline
            if let tolerance { (timer as! TolerantTimer).storedTolerance = tolerance }
            let due = self.dueTick(of: timer)
            // Still in a slot that starts no later than its new tick, and its slot's bound holds.
            guard due < oldDue || timer.latestTick(due: due, clock: self.clock) < oldLatest else { return false }
            self.unlink(timer)
            self.link(Unmanaged.passUnretained(timer), at: due)  // keeps the wheel's retain
            return true
        }

        /// The tick to wake at for the wheel: the earliest `latestTick` among its timers (a lower
        /// bound of it, after removals), or `nil` when empty. Waking there and advancing to it is
        /// never late for any timer and expires every timer due by then, so timers whose windows
        /// overlap that tick share the wake-up.
        ///
        /// - Complexity: O(levels) plus one step per occupied slot that starts before the answer:
        ///   two steps when the first slot holds default timers, about tolerance ÷ tick when it
        ///   holds coalesced ones; at most levels × slots.
        var nextWakeTick: UInt64? {
            var best = UInt64.max
            var found = false
            for level in 0..<WheelLevel.count {
                var bits = self.occupied[level]
                while bits != 0 {
                    let slot = bits.trailingZeroBitCount
                    // Slots come in time order (lower levels first, then by bit): none after this
                    // one can start, hence hold a timer due, before `best`.
                    if found, WheelLevel.start(level: level, slot: slot, now: self.currentTick) >= best { return best }
                    best = min(best, self.slotLatest[level &* WheelLevel.slotsPerLevel &+ slot])
                    found = true
                    bits &= bits &- 1
                }
            }
            return found ? best : nil
        }

        /// The first tick of the earliest non-empty slot, or `nil` when the wheel is empty; see
        /// `TimingWheel.nextExpiry`.
        var nextExpiry: UInt64? {
            guard let (level, slot) = self.earliestOccupiedSlot() else { return nil }
            return WheelLevel.start(level: level, slot: slot, now: self.currentTick)
        }

        /// Moves the wheel to `tick` and appends every timer due at or before it to `expired`,
        /// in due-tick order (insertion order within a tick); those timers leave the wheel and
        /// `expired` takes over the wheel's retain. Moving to the past or the present does nothing.
        ///
        /// - Complexity: O(expired + cascaded + levels × slots processed); empty ticks cost nothing.
        func advance(to tick: UInt64, into expired: inout [Timer]) {
            let target = min(tick, WheelTick.latest.rawValue)
            guard target > self.currentTick else { return }
            var processed = false
            while let (level, slot) = self.earliestOccupiedSlot() {
                let start = WheelLevel.start(level: level, slot: slot, now: self.currentTick)
                guard start <= target else { break }
                processed = true
                // Stand at the slot's first tick: every lower level is empty (an occupied lower
                // slot would start earlier), so cascading timers keep their order.
                self.currentTick = start
                let anchor = self.anchors[level &* WheelLevel.slotsPerLevel &+ slot]!.takeUnretainedValue()
                var node = anchor.next!
                self.detachAll(anchor, level: level, slot: slot)
                while node.toOpaque() != Unmanaged.passUnretained(anchor).toOpaque() {
                    let timer = node.takeUnretainedValue()
                    let following = timer.next!
                    let due = self.clock.tickAtOrAfter(timer.deadline)
                    if due <= start {
                        timer.next = nil
                        timer.previous = nil
                        self.count -= 1
                        expired.append(node.takeRetainedValue())
                    } else {
                        self.link(node, at: due)  // to a finer level: its tick is within this slot's span
                    }
                    node = following
                }
            }
            self.currentTick = target
            if processed { self.checkInvariants() }
        }

        /// Takes every timer out of the wheel, handing each to `body` (in no particular order);
        /// `currentTick` does not move.
        ///
        /// - Complexity: O(n + levels × slots).
        func removeAll(_ body: (Timer) -> Void) {
            for (flat, anchor) in self.anchors.enumerated() {
                guard let anchor = anchor?.takeUnretainedValue(), self.occupied[flat / WheelLevel.slotsPerLevel] != 0
                else { continue }
                var node = anchor.next!
                self.detachAll(anchor, level: flat / WheelLevel.slotsPerLevel, slot: flat % WheelLevel.slotsPerLevel)
                while node.toOpaque() != Unmanaged.passUnretained(anchor).toOpaque() {
                    let timer = node.takeRetainedValue()
                    node = timer.next!
                    timer.next = nil
                    timer.previous = nil
                    body(timer)
                }
            }
            self.count = 0
            self.checkInvariants()
        }

        // MARK: - Slot lists

        /// The tick `timer` is due at: its deadline rounded up to a tick, and after `currentTick`.
        private func dueTick(of timer: Timer) -> UInt64 {
            max(self.clock.tickAtOrAfter(timer.deadline), self.currentTick &+ 1)
        }

        /// Appends `node` to the tail of the slot `due` maps to from `currentTick`, and returns the
        /// last tick of its window. Takes no retain
        /// (neither do the link updates: `_withUnsafeGuaranteedRef`, every timer linked being
        /// held by the wheel's own retain).
        @discardableResult
        private func link(_ node: Unmanaged<Timer>, at due: UInt64) -> UInt64 {
            let level = WheelLevel.level(for: due, now: self.currentTick)
            let slot = WheelLevel.slot(for: due, level: level)
            let flat = level &* WheelLevel.slotsPerLevel &+ slot
            let latest = node._withUnsafeGuaranteedRef { $0.latestTick(due: due, clock: self.clock) }
            let wasEmpty = self.occupied[level] & (1 << UInt64(slot)) == 0
            self.slotLatest[flat] = wasEmpty ? latest : min(self.slotLatest[flat], latest)
            let anchor = Unmanaged<Timer>.fromOpaque(self.anchor(level: level, slot: slot).toOpaque())
            let tail = anchor._withUnsafeGuaranteedRef { $0.previous! }
            node._withUnsafeGuaranteedRef {
                $0.previous = tail
                $0.next = anchor
            }
            tail._withUnsafeGuaranteedRef { $0.next = node }
            anchor._withUnsafeGuaranteedRef { $0.previous = node }
            if tail.toOpaque() == anchor.toOpaque() { self.occupied[level] |= 1 << UInt64(slot) }
            return latest
        }

        /// Takes `timer` out of its slot list, clearing the slot's bit when it was the last.
        private func unlink(_ timer: Timer) {
            let previous = timer.previous!
            let next = timer.next!
            previous._withUnsafeGuaranteedRef { $0.next = next }
            next._withUnsafeGuaranteedRef { $0.previous = previous }
            timer.next = nil
            timer.previous = nil
            if previous.toOpaque() == next.toOpaque() {
                // Its neighbours on both sides are one object: the anchor, now alone.
                let flat = unsafeDowncast(previous.takeUnretainedValue(), to: Anchor.self).flat
                self.occupied[flat / WheelLevel.slotsPerLevel] &= ~(1 << UInt64(flat % WheelLevel.slotsPerLevel))
            }
        }

        /// Empties a slot at once (its timers keep their links, for the caller to walk).
        private func detachAll(_ anchor: Anchor, level: Int, slot: Int) {
            let me = Unmanaged.passUnretained(anchor as Timer)
            anchor.next = me
            anchor.previous = me
            self.occupied[level] &= ~(1 << UInt64(slot))
        }

        private func anchor(level: Int, slot: Int) -> Unmanaged<Anchor> {
            let flat = level &* WheelLevel.slotsPerLevel &+ slot
            if let anchor = self.anchors[flat] { return anchor }
            let anchor = Unmanaged.passRetained(Anchor(flat: flat))
            self.anchors[flat] = anchor
            return anchor
        }

        /// The lowest set bit of the lowest non-empty level, which is the earliest slot.
        private func earliestOccupiedSlot() -> (level: Int, slot: Int)? {
            for level in 0..<WheelLevel.count {
                let bits = self.occupied[level]
                if bits != 0 { return (level, bits.trailingZeroBitCount) }
            }
            return nil
        }

        /// Walks the whole wheel and traps, naming what is wrong, if an invariant is broken:
        /// bits match non-empty slots, lists are well linked both ways, each timer is pending
        /// and in a slot that starts no later than its due tick, `count` is the total.
        /// Compiled only with `SERIAL_INTERNAL_CHECKS` (opt-in); otherwise it does nothing.
        ///
        /// - Complexity: O(n + levels × slots).
        func checkInvariants() {
            #if SERIAL_INTERNAL_CHECKS
            var held = 0
            for level in 0..<WheelLevel.count {
                for slot in 0..<WheelLevel.slotsPerLevel {
                    let anchor = self.anchors[level * WheelLevel.slotsPerLevel + slot]?.takeUnretainedValue()
                    let anchorNode = anchor.map { Unmanaged.passUnretained($0 as Timer).toOpaque() }
                    let bit = self.occupied[level] & (1 << UInt64(slot)) != 0
                    let empty = anchor.map { $0.next!.toOpaque() == anchorNode } ?? true
                    if bit == empty {
                        fatalError("internal inconsistency: wheel level \(level) slot \(slot): bit \(bit), empty \(empty)")
                    }
                    guard let anchor else { continue }
                    var previous = anchorNode
                    var node = anchor.next!
                    while node.toOpaque() != anchorNode {
                        let timer = node.takeUnretainedValue()
                        guard timer.previous?.toOpaque() == previous, case .pending = timer.stage else {
                            fatalError("internal inconsistency: wheel level \(level) slot \(slot): a timer is mislinked or not pending")
                        }
                        // A timer filed past due waits for the next tick; a pushed-back one may sit
                        // in an earlier slot than its tick's, never a later one.
                        let due = self.dueTick(of: timer)
                        let bound = self.slotLatest[level * WheelLevel.slotsPerLevel + slot]
                        if bound > timer.latestTick(due: due, clock: self.clock) {
                            fatalError(
                                "internal inconsistency: wheel level \(level) slot \(slot) may wake at tick \(bound), "
                                    + "after a timer's window ends, at tick \(timer.latestTick(due: due, clock: self.clock))")
                        }
                        if WheelLevel.start(level: level, slot: slot, now: self.currentTick) > due {
                            fatalError(
                                "internal inconsistency: a timer due at tick \(due) sits in level \(level) slot \(slot), "
                                    + "which starts later, at tick \(self.currentTick)")
                        }
                        held += 1
                        previous = node.toOpaque()
                        node = timer.next!
                    }
                }
            }
            if held != self.count { fatalError("internal inconsistency: the wheel holds \(held) timers, count says \(self.count)") }
            #endif
        }
    }
}
