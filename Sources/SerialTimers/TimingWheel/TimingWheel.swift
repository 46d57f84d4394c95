/// A hierarchical timing wheel: a pure data structure that holds elements until a tick.
///
/// It has no thread and no clock. Callers pass ticks in (`insert(_:at:)`, `advance(to:)`) and
/// get expired elements out; what a tick lasts is the driver's business (`TimerService`
/// makes it a `Duration` and drives the wheel from one scheduler).
///
/// ```swift
/// var wheel = TimingWheel<String>()
/// let handle = wheel.insert("retry", at: 130)
/// wheel.insert("ping", at: 5)
/// let next = wheel.nextExpiry             // tick 5: the next tick at which advancing has work
/// let expired = wheel.advance(to: 100)     // ["ping"]
/// let cancelled = wheel.cancel(handle)     // "retry"; cancelling again returns nil
/// ```
///
/// **Structure.** Eleven levels of 64 slots (see `WheelLevel`): level 0 slots are one tick,
/// level 1 slots 64 ticks, and so on, covering every `UInt64` tick. Each level keeps a
/// `UInt64` bitmap of its non-empty slots. Each slot is a doubly-linked list of nodes stored
/// in one array (a slab), linked by index; freed nodes are reused through a free list, so a
/// steady state allocates nothing. A `Handle` is a node index plus the node's generation,
/// which changes whenever the node is freed, so a stale handle can never reach a later entry.
///
/// **Time.** The wheel stands at `currentTick`. An entry whose deadline is at or before
/// `currentTick` when inserted is treated as due at `currentTick + 1`: the wheel's time never
/// goes back, so such an entry comes out of the next `advance`. `advance(to:)` never returns an
/// element before its deadline tick, and returns each element exactly once.
///
/// **Order.** `advance` returns elements in deadline order; elements due at the same tick come
/// out in insertion order.
///
/// - Invariant: every stored entry has `deadline > currentTick` and sits at level
///   `WheelLevel.level(for: deadline, now: currentTick)`, in the slot of its deadline's digit
///   at that level; a level's bitmap bit is set exactly when that slot's list is non-empty.
///   `_checkInvariants()` walks all of it in builds with `SERIAL_INTERNAL_CHECKS` (opt-in).
public struct TimingWheel<Element> {
    /// Identifies one inserted element, for `cancel(_:)`.
    ///
    /// Stays valid until the element is cancelled or expires; after that every use is a
    /// harmless no-op, even when its storage has been reused by another element.
    public struct Handle: Hashable, Sendable {
        @usableFromInline let index: Int32
        @usableFromInline let generation: UInt64

        @inlinable
        init(index: Int32, generation: UInt64) {
            self.index = index
            self.generation = generation
        }
    }

    @usableFromInline
    struct Node {
        @usableFromInline var element: Element?
        @usableFromInline var deadline: UInt64
        /// Neighbours in the slot list, or in the free list (`next` only); -1 for none.
        @usableFromInline var previous: Int32
        @usableFromInline var next: Int32
        /// Bumped each time the node is freed, so old handles stop matching.
        @usableFromInline var generation: UInt64
        /// `level * 64 + slot` while linked, -1 while free.
        @usableFromInline var slot: Int16

        @inlinable
        init(element: Element?, deadline: UInt64, previous: Int32, next: Int32, generation: UInt64, slot: Int16) {
            self.element = element
            self.deadline = deadline
            self.previous = previous
            self.next = next
            self.generation = generation
            self.slot = slot
        }
    }

    @usableFromInline var nodes: [Node] = []
    @usableFromInline var freeHead: Int32 = -1
    /// Per `level * 64 + slot`: first and last node of the slot list, -1 when empty.
    @usableFromInline var heads: [Int32]
    @usableFromInline var tails: [Int32]
    /// Per level: bit `s` set exactly when slot `s` of that level is non-empty.
    @usableFromInline var occupied: [UInt64]
    @usableFromInline var elapsed: UInt64
    @usableFromInline var storedCount = 0
    /// The generation new nodes start at: above every generation handed out before
    /// `releaseStorage()`, so an old handle never matches a new node.
    @usableFromInline var generationBase: UInt64 = 0

    /// Creates an empty wheel standing at `tick`, with room for `capacity` elements before it
    /// grows its storage.
    public init(currentTick tick: WheelTick = 0, capacity: Int = 0) {
        if capacity < 0 { fatalError(TimersMisuse.negativeCapacity(capacity)) }
        let slotCount = WheelLevel.count * WheelLevel.slotsPerLevel
        self.heads = Array(repeating: -1, count: slotCount)
        self.tails = Array(repeating: -1, count: slotCount)
        self.occupied = Array(repeating: 0, count: WheelLevel.count)
        self.elapsed = min(tick.rawValue, WheelTick.latest.rawValue)
        self.nodes.reserveCapacity(capacity)
    }

    /// The tick the wheel stands at: everything due at or before it has been returned.
    @inlinable
    public var currentTick: WheelTick { WheelTick(self.elapsed) }

    /// How many elements wait.
    @inlinable
    public var count: Int { self.storedCount }

    /// Whether no element waits.
    @inlinable
    public var isEmpty: Bool { self.storedCount == 0 }

    /// Adds `element`, due at `deadline` (a deadline at or before `currentTick` means
    /// `currentTick + 1`).
    ///
    /// - Returns: A handle for `cancel(_:)`.
    /// - Complexity: O(1); amortized O(1) when the node storage has to grow.
    @discardableResult
    @inlinable
    public mutating func insert(_ element: Element, at deadline: WheelTick) -> Handle {
        let due = max(deadline.rawValue, self.elapsed + 1)
        let index = self.allocateNode(element, deadline: due)
        self.link(index)
        self.storedCount += 1
        return Handle(index: index, generation: self.nodes[Int(index)].generation)
    }

    /// Removes the element of `handle` if it still waits.
    ///
    /// - Returns: The element, or `nil` when it already expired or was cancelled (so
    ///   cancelling twice, or after expiry, is safe).
    /// - Complexity: O(1): the node is unlinked from its slot list at once.
    @discardableResult
    @inlinable
    public mutating func cancel(_ handle: Handle) -> Element? {
        guard self.isLinked(handle) else { return nil }
        let index = Int(handle.index)
        self.unlink(index)
        self.storedCount -= 1
        return self.freeNode(index)
    }

    /// Moves the element of `handle` to `deadline` (a deadline at or before `currentTick`
    /// means `currentTick + 1`), earlier or later; the handle stays valid.
    ///
    /// - Returns: `false` when the element no longer waits (nothing is moved).
    /// - Complexity: O(1), no allocation: the node is unlinked and linked again in place.
    @discardableResult
    @inlinable
    public mutating func reschedule(_ handle: Handle, to deadline: WheelTick) -> Bool {
        guard self.isLinked(handle) else { return false }
        let index = Int(handle.index)
        self.unlink(index)
        self.nodes[index].deadline = max(deadline.rawValue, self.elapsed + 1)
        self.link(Int32(index))
        return true
    }

    /// Whether the element of `handle` still waits.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func contains(_ handle: Handle) -> Bool {
        self.isLinked(handle)
    }

    /// The deadline tick of the element of `handle` (after the round-up of a past deadline to
    /// `currentTick + 1`), or `nil` when it no longer waits.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func deadline(of handle: Handle) -> WheelTick? {
        self.isLinked(handle) ? WheelTick(self.nodes[Int(handle.index)].deadline) : nil
    }

    /// Removes every waiting element and returns them, in no particular order. `currentTick`
    /// does not move.
    ///
    /// - Complexity: O(n + number of slots).
    public mutating func removeAll() -> [Element] {
        var removed: [Element] = []
        removed.reserveCapacity(self.storedCount)
        for flat in self.heads.indices {
            var index = self.heads[flat]
            while index >= 0 {
                let next = self.nodes[Int(index)].next
                removed.append(self.freeNode(Int(index)))
                index = next
            }
            self.heads[flat] = -1
            self.tails[flat] = -1
        }
        for level in self.occupied.indices { self.occupied[level] = 0 }
        self.storedCount = 0
        self._checkInvariants()
        return removed
    }

    /// How many nodes the storage holds, waiting or free.
    public var nodeCapacity: Int { self.nodes.count }

    /// Frees the node storage of an empty wheel (after a mass cancel), keeping every handle
    /// handed out before invalid. Does nothing while elements wait.
    ///
    /// - Complexity: O(nodes).
    public mutating func releaseStorage() {
        guard self.storedCount == 0 else { return }
        var base = self.generationBase
        for index in self.nodes.indices { base = max(base, self.nodes[index].generation &+ 1) }
        self.generationBase = base
        self.nodes = []
        self.freeHead = -1
    }

    /// Makes room for `capacity` elements in total without growing the node storage.
    public mutating func reserveCapacity(_ capacity: Int) {
        self.nodes.reserveCapacity(capacity)
    }

    // MARK: - Nodes and slot lists

    @inlinable @inline(__always)
    func isLinked(_ handle: Handle) -> Bool {
        let index = Int(handle.index)
        guard index >= 0, index < self.nodes.count else { return false }
        // Field by field: copying the whole node would retain its element.
        return self.nodes[index].generation == handle.generation && self.nodes[index].slot >= 0
    }

    @inlinable @inline(__always)
    mutating func allocateNode(_ element: Element, deadline: UInt64) -> Int32 {
        if self.freeHead >= 0 {
            let index = self.freeHead
            self.freeHead = self.nodes[Int(index)].next
            self.nodes[Int(index)].element = element
            self.nodes[Int(index)].deadline = deadline
            return index
        }
        if self.nodes.count >= Int(Int32.max) { fatalError(TimersMisuse.wheelFull) }
        self.nodes.append(
            Node(element: element, deadline: deadline, previous: -1, next: -1, generation: self.generationBase, slot: -1))
        return Int32(self.nodes.count - 1)
    }

    /// Returns the node's element and puts the node on the free list (the caller unlinked it).
    @inlinable @inline(__always)
    mutating func freeNode(_ index: Int) -> Element {
        let element = self.nodes[index].element.take()!
        self.nodes[index].generation &+= 1
        self.nodes[index].slot = -1
        self.nodes[index].previous = -1
        self.nodes[index].next = self.freeHead
        self.freeHead = Int32(index)
        return element
    }

    /// Appends the node to the tail of the slot its deadline belongs to at the current tick.
    @inlinable @inline(__always)
    mutating func link(_ index: Int32) {
        let deadline = self.nodes[Int(index)].deadline
        assert(deadline > self.elapsed, "internal inconsistency: linking deadline \(deadline) at tick \(self.elapsed)")
        let level = WheelLevel.level(for: deadline, now: self.elapsed)
        let slot = WheelLevel.slot(for: deadline, level: level)
        let flat = level &* WheelLevel.slotsPerLevel &+ slot
        let tail = self.tails[flat]
        self.nodes[Int(index)].previous = tail
        self.nodes[Int(index)].next = -1
        self.nodes[Int(index)].slot = Int16(truncatingIfNeeded: flat)
        if tail >= 0 {
            self.nodes[Int(tail)].next = index
        } else {
            self.heads[flat] = index
            self.occupied[level] |= 1 << UInt64(slot)
        }
        self.tails[flat] = index
    }

    @inlinable @inline(__always)
    mutating func unlink(_ index: Int) {
        let flat = Int(self.nodes[index].slot)
        let previous = self.nodes[index].previous
        let next = self.nodes[index].next
        if previous >= 0 {
            self.nodes[Int(previous)].next = next
        } else {
            self.heads[flat] = next
        }
        if next >= 0 {
            self.nodes[Int(next)].previous = previous
        } else {
            self.tails[flat] = previous
        }
        if self.heads[flat] < 0 {
            let level = flat / WheelLevel.slotsPerLevel
            self.occupied[level] &= ~(1 << UInt64(flat % WheelLevel.slotsPerLevel))
        }
    }
}

extension TimingWheel: Sendable where Element: Sendable {}
extension TimingWheel.Node: Sendable where Element: Sendable {}

extension TimingWheel: CustomStringConvertible {
    /// The current tick, the count and the non-empty levels' bitmaps, for assertion messages.
    public var description: String {
        "TimingWheel(at: \(self.elapsed), count: \(self.storedCount), occupied: \(self.occupiedDescription))"
    }

    var occupiedDescription: String {
        self.occupied.enumerated().filter { $0.element != 0 }
            .map { "L\($0.offset)=\(String($0.element, radix: 2))" }
            .joined(separator: " ")
    }
}
