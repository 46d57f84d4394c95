/// A growable FIFO ring over a power-of-two array: O(1) amortised append and pop at either
/// end, no allocation once it has grown to the working size.
///
/// - Invariant: `storage.count` is a power of two and `count <= storage.count`; the
///   elements are `storage[(head + i) & mask]` for `i` in `0..<count`, every other slot is `nil`.
struct RingBuffer<Element> {
    private var storage: ContiguousArray<Element?>
    private var head = 0
    /// The number of elements.
    private(set) var count = 0

    init(initialCapacity: Int = 16) {
        var capacity = 1
        while capacity < max(initialCapacity, 1) { capacity <<= 1 }
        self.storage = ContiguousArray(repeating: nil, count: capacity)
    }

    var isEmpty: Bool { self.count == 0 }

    private var mask: Int { self.storage.count - 1 }

    /// The first element, if any.
    var first: Element? { self.count == 0 ? nil : self.storage[self.head] }

    /// Adds `element` at the back.
    ///
    /// - Complexity: O(1) amortised.
    mutating func append(_ element: Element) {
        if self.count == self.storage.count { self.grow() }
        self.storage[(self.head &+ self.count) & self.mask] = element
        self.count &+= 1
    }

    /// Adds `element` at the front.
    ///
    /// - Complexity: O(1) amortised.
    mutating func prepend(_ element: Element) {
        if self.count == self.storage.count { self.grow() }
        self.head = (self.head &- 1) & self.mask
        self.storage[self.head] = element
        self.count &+= 1
    }

    /// Inserts `element` so that it becomes the element at `index` (`0...count`), the ones from
    /// `index` on moving one place back.
    ///
    /// - Complexity: O(`index`) amortised: the elements before it move one place forward.
    mutating func insert(_ element: Element, at index: Int) {
        precondition(index >= 0 && index <= self.count, "RingBuffer.insert: index \(index) outside 0...\(self.count)")
        self.prepend(element)
        // Walk the new element from the front to its place.
        for position in 0..<index {
            self.storage.swapAt((self.head &+ position) & self.mask, (self.head &+ position &+ 1) & self.mask)
        }
    }

    /// Whether some element satisfies `predicate`, front to back.
    ///
    /// - Complexity: O(`count`).
    func contains(where predicate: (Element) -> Bool) -> Bool {
        for offset in 0..<self.count where predicate(self.storage[(self.head &+ offset) & self.mask]!) { return true }
        return false
    }

    /// Removes and returns the front element, or `nil` when empty.
    ///
    /// - Complexity: O(1).
    mutating func popFirst() -> Element? {
        guard self.count > 0 else { return nil }
        let element = self.storage[self.head]
        self.storage[self.head] = nil
        self.head = (self.head &+ 1) & self.mask
        self.count &-= 1
        return element
    }

    /// Removes and returns the back element, or `nil` when empty.
    ///
    /// - Complexity: O(1).
    mutating func popLast() -> Element? {
        guard self.count > 0 else { return nil }
        let index = (self.head &+ self.count &- 1) & self.mask
        let element = self.storage[index]
        self.storage[index] = nil
        self.count &-= 1
        return element
    }

    /// Removes every element for which `shouldRemove` is true, keeping the others in order,
    /// and returns the removed ones in their former order.
    ///
    /// - Complexity: O(`count`).
    mutating func removeAll(where shouldRemove: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept = RingBuffer(initialCapacity: self.storage.count)
        while let element = self.popFirst() {
            if shouldRemove(element) { removed.append(element) } else { kept.append(element) }
        }
        self = kept
        return removed
    }

    /// Gives back storage a burst left behind: when empty and holding more than four times
    /// what `recentCount` needs (never less than `floor`), drops to twice that. The gap between
    /// 4× and 2× is the hysteresis: a steady load of any size never reallocates.
    ///
    /// - Returns: How many slots it gave back (0 when it kept its storage).
    /// - Complexity: O(1) unless it shrinks; then one allocation of the new size.
    @discardableResult
    mutating func shrinkIfOversized(forRecentCount recentCount: Int, floor: Int = 256) -> Int {
        let need = Swift.max(recentCount, floor)
        guard self.count == 0, self.storage.count > 4 * need else { return 0 }
        let before = self.storage.count
        self = RingBuffer(initialCapacity: 2 * need)
        return before - self.storage.count
    }

    /// Moves the first `count` elements (all, if fewer) to the back of `other`, in order: each is
    /// moved out of its slot and into the other ring's, so no element is copied, retained or
    /// released on the way. One element at a time on purpose: the element moves are specialized
    /// and inlined, where a bulk `moveUpdate(from:count:)` of a non-trivial element calls the
    /// runtime's generic copy (`swift_arrayAssignWithTake`), which made a one-item batch, the
    /// common one (an actor hop), cost about 600 instructions instead of about 60.
    ///
    /// - Complexity: O(`count`) moved words; amortised O(1) allocations (when `other` grows).
    mutating func moveFirst(_ count: Int, appendingTo other: inout RingBuffer) {
        let total = Swift.min(count, self.count)
        guard total > 0 else { return }
        while other.storage.count - other.count < total { other.grow() }
        let sourceHead = self.head
        let sourceMask = self.mask
        let destinationTail = other.head &+ other.count
        let destinationMask = other.mask
        self.storage.withUnsafeMutableBufferPointer { source in
            other.storage.withUnsafeMutableBufferPointer { destination in
                for moved in 0..<total {
                    let from = source.baseAddress! + ((sourceHead &+ moved) & sourceMask)
                    let to = destination.baseAddress! + ((destinationTail &+ moved) & destinationMask)
                    // The destination's slot holds `nil`; the source's is left `nil` again.
                    to.pointee = from.move()
                    from.initialize(to: nil)
                }
            }
        }
        self.head = (self.head &+ total) & self.mask
        self.count &-= total
        other.count &+= total
    }

    /// The number of elements the storage holds without growing.
    var capacity: Int { self.storage.count }

    private mutating func grow() {
        var bigger = ContiguousArray<Element?>(repeating: nil, count: self.storage.count * 2)
        for offset in 0..<self.count {
            bigger[offset] = self.storage[(self.head &+ offset) & self.mask]
        }
        self.storage = bigger
        self.head = 0
    }
}
