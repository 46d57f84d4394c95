import SerialCore

/// The queued requests of one priority, in submission order, with lazy removal.
///
/// A slot names a request and the token of the enqueue that made it; it is live while the
/// request is still queued under that token. Starting or ending a request does not touch the
/// list: its slot goes stale and is dropped when the head reaches it (O(1) cancel). A request
/// queued again (retry, redirect) gets a new slot at its original place in submission order.
///
/// - Invariant: `slots[head...]` is sorted by request id (a stale slot may share its id with a live one).
struct PendingList {
    struct Slot {
        let id: RequestID
        /// The enqueue this slot belongs to; live while `State.queued[id] == token`.
        let token: UInt64
        /// Copied from the request so a dispatch pass need not look it up.
        let kind: RequestKind?
        let submittedAt: MonotonicInstant
    }

    private(set) var slots: [Slot] = []
    private(set) var head = 0

    /// Adds `slot` at its place in submission order.
    ///
    /// - Complexity: O(1) for a new request (the largest id yet), O(n) for a request queued again.
    mutating func insert(_ slot: Slot) {
        if self.slots.count == self.head || self.slots[self.slots.count - 1].id < slot.id {
            self.slots.append(slot)
            return
        }
        var low = self.head
        var high = self.slots.count
        while low < high {
            let middle = (low + high) / 2
            if self.slots[middle].id < slot.id { low = middle + 1 } else { high = middle }
        }
        self.slots.insert(slot, at: low)
    }

    /// Drops stale slots from the head and reclaims the space they held.
    mutating func dropStaleHead(isLive: (Slot) -> Bool) {
        while self.head < self.slots.count && !isLive(self.slots[self.head]) {
            self.head += 1
        }
        if self.head == self.slots.count {
            self.slots.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.head >= 64 && self.head * 2 >= self.slots.count {
            self.slots.removeFirst(self.head)
            self.head = 0
        }
    }

    /// Forgets every slot.
    mutating func removeAll() {
        self.slots.removeAll()
        self.head = 0
    }

    var isSorted: Bool {
        var index = self.head + 1
        while index < self.slots.count {
            if self.slots[index].id < self.slots[index - 1].id { return false }
            index += 1
        }
        return true
    }
}
