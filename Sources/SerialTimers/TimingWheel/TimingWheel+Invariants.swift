extension TimingWheel {
    /// Walks the whole wheel and traps, printing the offending state, if an invariant is broken:
    ///
    /// - a level's bitmap bit is set exactly when that slot's list is non-empty;
    /// - slot lists are well linked (each node's `previous` is the node before it, the tail is
    ///   the last node), and each node records the slot it is in;
    /// - each stored entry is due after `currentTick`, at the level and slot its deadline maps
    ///   to from `currentTick`;
    /// - stored plus free nodes account for all the storage, and `count` is the stored number.
    ///
    /// Runs at the end of `advance` and `removeAll`, and whenever a test calls it. Compiled only
    /// with `SERIAL_INTERNAL_CHECKS`, which is opt-in (`SERIAL_INTERNAL_CHECKS=1 swift build`;
    /// this project's CI sets it); otherwise it does nothing. Underscored: a test hook, not API.
    ///
    /// - Complexity: O(n + levels × slots) — it voids the complexity promises of the calls it
    ///   is made from, which is why insert and cancel only do O(1) assertions.
    public func _checkInvariants() {
        #if SERIAL_INTERNAL_CHECKS
        var linked = 0
        for level in 0..<WheelLevel.count {
            for slot in 0..<WheelLevel.slotsPerLevel {
                let flat = level * WheelLevel.slotsPerLevel + slot
                let bit = self.occupied[level] & (1 << UInt64(slot)) != 0
                precondition(
                    bit == (self.heads[flat] >= 0),
                    "internal inconsistency: level \(level) slot \(slot): bit \(bit), head \(self.heads[flat]), "
                        + "occupied=\(String(self.occupied[level], radix: 2)); \(self)")
                var previous: Int32 = -1
                var index = self.heads[flat]
                while index >= 0 {
                    let node = self.nodes[Int(index)]
                    precondition(
                        node.previous == previous && Int(node.slot) == flat && node.element != nil,
                        "internal inconsistency: node \(index) in level \(level) slot \(slot) has previous "
                            + "\(node.previous) (expected \(previous)), slot \(node.slot); \(self)")
                    precondition(
                        node.deadline > self.elapsed
                            && WheelLevel.level(for: node.deadline, now: self.elapsed) == level
                            && WheelLevel.slot(for: node.deadline, level: level) == slot,
                        "internal inconsistency: node \(index) due at \(node.deadline) sits in level \(level) "
                            + "slot \(slot) at tick \(self.elapsed); \(self)")
                    linked += 1
                    precondition(linked <= self.nodes.count, "internal inconsistency: a slot list loops; \(self)")
                    previous = index
                    index = node.next
                }
                precondition(
                    self.tails[flat] == previous,
                    "internal inconsistency: level \(level) slot \(slot) tail \(self.tails[flat]), last node \(previous)")
            }
        }
        var free = 0
        var index = self.freeHead
        while index >= 0 {
            let node = self.nodes[Int(index)]
            precondition(
                node.slot == -1 && node.element == nil,
                "internal inconsistency: free node \(index) is linked to slot \(node.slot) or holds an element")
            free += 1
            precondition(free <= self.nodes.count, "internal inconsistency: the free list loops; \(self)")
            index = node.next
        }
        precondition(
            linked == self.storedCount && linked + free == self.nodes.count,
            "internal inconsistency: \(linked) linked + \(free) free nodes of \(self.nodes.count), count \(self.storedCount)")
        #endif
    }
}
