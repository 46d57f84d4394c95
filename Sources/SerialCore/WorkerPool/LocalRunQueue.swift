/// A pool thread's own run queue: a bounded ring that only its owner fills (at the tail) and that
/// its owner and idle threads take from (at the head) with a compare-and-swap, so a busy pool
/// thread queues and takes work without any lock (the design of Go's per-P `runq`).
///
/// Elements are `PoolRunnable.Word`s (a retained queue or a task job); whoever advances `head`
/// past a slot owns what it read there.
///
/// Why a thief may read slots before it owns them: the owner writes slot `i` only once `head`
/// has passed `i - capacity`, and `head` only grows; a thief that read a slot which was then
/// overwritten finds `head` changed and its compare-and-swap fails, so it never takes what it
/// read. Slots are atomics (relaxed) so that this read is not a data race.
final class LocalRunQueue: @unchecked Sendable {  // all state is atomic
    static let capacity = 256
    private static let mask = UInt64(capacity - 1)

    /// The next slot to take. Advanced by compare-and-swap: by the owner one at a time, by a
    /// thief half the ring at a time.
    private let head = SeamAtomic<UInt64>(0)
    /// The next slot to fill. Stored by the owner only.
    private let tail = SeamAtomic<UInt64>(0)
    private let slots: InlineArray<256, SeamAtomic<UInt>> = InlineArray { _ in SeamAtomic(0) }

    /// Adds `word` at the tail (owner only). `false` when the ring is full: the caller moves half
    /// of it out (`takeHalf`) and tries again.
    ///
    /// The tail is stored sequentially consistent: a `PoolCore` push then reads `freeCount`, and
    /// a thread becoming free adds to it, then reads every tail (Dekker's hand-over, as for `next`).
    func push(_ word: PoolRunnable.Word) -> Bool {
        let head = self.head.load(ordering: .acquiring)
        let tail = self.tail.load(ordering: .relaxed)
        guard tail &- head < UInt64(Self.capacity) else { return false }
        self.slots[Int(tail & Self.mask)].store(word.rawValue, ordering: .relaxed)
        self.tail.store(tail &+ 1, ordering: .sequentiallyConsistent)
        return true
    }

    /// Takes the word at the head (owner only: a thief uses `stealHalf`).
    func pop() -> PoolRunnable.Word? {
        while true {
            let head = self.head.load(ordering: .acquiring)
            let tail = self.tail.load(ordering: .relaxed)
            guard head != tail else { return nil }
            let raw = self.slots[Int(head & Self.mask)].load(ordering: .relaxed)
            if self.head.compareExchange(expected: head, desired: head &+ 1, ordering: .acquiringAndReleasing).exchanged {
                return PoolRunnable.Word(rawValue: raw)
            }
        }
    }

    /// Takes the first half (rounded up) of what the ring holds, in order, into `taken`. Any
    /// thread may call it; the owner does when its ring is full or its thread is about to block.
    func takeHalf(into taken: inout [PoolRunnable.Word]) {
        while let (head, half) = self.firstHalf() {
            let start = taken.count
            for index in head..<(head &+ half) {
                taken.append(PoolRunnable.Word(rawValue: self.slots[Int(index & Self.mask)].load(ordering: .relaxed)))
            }
            if self.head.compareExchange(expected: head, desired: head &+ half, ordering: .acquiringAndReleasing).exchanged {
                return
            }
            taken.removeSubrange(start...)
        }
    }

    /// Moves the first half (rounded up) of this ring into `thief`'s ring, which must be empty
    /// and be the calling thread's own; returns the first word moved, to run now (the others
    /// stay in `thief`, where other idle threads may steal them in turn).
    func stealHalf(into thief: LocalRunQueue) -> PoolRunnable.Word? {
        let thiefTail = thief.tail.load(ordering: .relaxed)
        while let (head, half) = self.firstHalf() {
            for offset in 0..<half {
                let raw = self.slots[Int((head &+ offset) & Self.mask)].load(ordering: .relaxed)
                thief.slots[Int((thiefTail &+ offset) & Self.mask)].store(raw, ordering: .relaxed)
            }
            guard self.head.compareExchange(expected: head, desired: head &+ half, ordering: .acquiringAndReleasing).exchanged
            else { continue }
            // The first word runs now; the rest become the thief's, visible to other thieves.
            let first = thief.slots[Int(thiefTail & Self.mask)].load(ordering: .relaxed)
            if half > 1 {
                // Slot `thiefTail` is given up: the thief's head moves past it with the tail.
                thief.head.store(thiefTail &+ 1, ordering: .releasing)
                thief.tail.store(thiefTail &+ half, ordering: .sequentiallyConsistent)
            }
            return PoolRunnable.Word(rawValue: first)
        }
        return nil
    }

    /// Where the ring's first half (rounded up) starts and how long it is; `nil` when empty.
    /// Sequentially consistent: a thread becoming free adds itself to `freeCount`, then reads here.
    private func firstHalf() -> (head: UInt64, half: UInt64)? {
        while true {
            let head = self.head.load(ordering: .sequentiallyConsistent)
            let tail = self.tail.load(ordering: .sequentiallyConsistent)
            let count = tail &- head
            // A head read before a thief moved it and a tail read after the owner refilled:
            // inconsistent, read again (Go's `runqgrab` does the same).
            guard count <= UInt64(Self.capacity) else { continue }
            guard count > 0 else { return nil }
            return (head, count &- count / 2)
        }
    }

    /// Whether the ring looks empty (a hint: exact only for the owner, about its own pushes).
    var isEmpty: Bool {
        self.tail.load(ordering: .sequentiallyConsistent) == self.head.load(ordering: .sequentiallyConsistent)
    }

    #if SERIAL_SIMULATION
    /// How many words the ring holds, read without scheduling points (invariant checks only).
    var countForInvariantCheck: Int {
        Int(self.tail.valueForInvariantCheck() &- self.head.valueForInvariantCheck())
    }
    #endif
}
