/// A binary min-heap of delayed work ordered by (deadline, order of scheduling), so equal
/// deadlines run in the order they were scheduled.
///
/// The timing wheel in SerialTimers is the structure for bulk timers; this small heap serves
/// a queue's own `asyncAfter` and the virtual scheduler of SerialTesting.
///
/// - Invariant: every entry is no earlier than its parent.
package struct DelayedHeap {
    package struct Entry {
        package let handle: DelayedWork
        let sequence: UInt64

        package var deadline: MonotonicInstant { self.handle.deadline }

        func precedes(_ other: Entry) -> Bool {
            (self.deadline, self.sequence) < (other.deadline, other.sequence)
        }
    }

    package init() {}

    private var entries: [Entry] = []
    private var nextSequence: UInt64 = 0

    package var isEmpty: Bool { self.entries.isEmpty }
    package var count: Int { self.entries.count }
    package var first: Entry? { self.entries.first }

    /// - Complexity: O(log n).
    package mutating func insert(_ handle: DelayedWork) {
        self.entries.append(Entry(handle: handle, sequence: self.nextSequence))
        self.nextSequence &+= 1
        self.siftUp(self.entries.count - 1)
        self.checkInvariants()
    }

    /// - Complexity: O(log n).
    package mutating func popFirst() -> Entry? {
        guard !self.entries.isEmpty else { return nil }
        self.entries.swapAt(0, self.entries.count - 1)
        let first = self.entries.removeLast()
        if !self.entries.isEmpty { self.siftDown(0) }
        self.checkInvariants()
        return first
    }

    /// Removes the entries whose handles were cancelled (their closures are already gone).
    ///
    /// - Complexity: O(n).
    package mutating func removeCancelled() {
        self.entries.removeAll { $0.handle.isCancelled }
        for index in stride(from: self.entries.count / 2 - 1, through: 0, by: -1) { self.siftDown(index) }
        self.checkInvariants()
    }

    /// Removes and returns every entry (for the caller to cancel outside its lock).
    package mutating func removeAll() -> [Entry] {
        defer { self.entries.removeAll() }
        return self.entries
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard self.entries[child].precedes(self.entries[parent]) else { return }
            self.entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < self.entries.count else { return }
            let right = left + 1
            var smallest = left
            if right < self.entries.count && self.entries[right].precedes(self.entries[left]) { smallest = right }
            guard self.entries[smallest].precedes(self.entries[parent]) else { return }
            self.entries.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// Checks the heap order over the whole array (only with the opt-in `SERIAL_INTERNAL_CHECKS`, and only for small
    /// heaps, so that tests with many thousands of entries stay linear).
    package func checkInvariants() {
        #if SERIAL_INTERNAL_CHECKS
        guard self.entries.count <= 256 else { return }
        for index in self.entries.indices.dropFirst() {
            let parent = (index - 1) / 2
            precondition(
                !self.entries[index].precedes(self.entries[parent]),
                "internal inconsistency: delayed heap entry \(index) (\(self.entries[index].deadline)) precedes "
                    + "its parent \(parent) (\(self.entries[parent].deadline))")
        }
        #endif
    }
}

extension DelayedHeap {
    /// Entries not cancelled. O(n): for tests and diagnostics.
    package var pendingCount: Int {
        self.entries.count { !$0.handle.isCancelled }
    }

    /// The earliest deadline among entries not cancelled. O(n): for tests and diagnostics.
    package var earliestPendingDeadline: MonotonicInstant? {
        self.entries.lazy.filter { !$0.handle.isCancelled }.map(\.deadline).min()
    }
}
