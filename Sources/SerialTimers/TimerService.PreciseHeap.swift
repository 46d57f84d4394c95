import SerialCore

extension TimerService {
    /// The timers whose tolerance is under one tick, by exact deadline: a binary min-heap beside
    /// the wheel (as the kernel keeps hrtimers beside its timer wheel), so the service can wake
    /// at the earliest exact deadline rather than at a tick.
    ///
    /// **Lazy removal.** A timer in the heap has `next` set to the heap's `marker` (so it counts
    /// as waiting, and needs no field of its own to find its entry). Cancelling or moving it only
    /// changes the timer: the entry it leaves behind is stale, recognised when it reaches the top
    /// (its timer no longer carries the marker, or has another deadline), and dropped then or
    /// when stale entries outnumber live ones (`compact`). So insert and move are O(log n),
    /// removal O(1), and the heap stays within a constant factor of the timers it holds.
    ///
    /// Ownership: each entry holds its timer strongly. Not thread-safe: under the service's lock.
    ///
    /// - Invariant: `count` is the number of distinct timers carrying the marker, each with at
    ///   least one entry of its current deadline; entries are in heap order by deadline.
    struct PreciseHeap {
        struct Entry {
            let deadline: UInt64
            let timer: Timer
        }

        /// What a held timer's `next` points at; never linked anywhere.
        let marker: Anchor
        private var entries: [Entry] = []
        /// Timers held (entries may be more: stale ones, not yet dropped).
        private(set) var count = 0

        init() {
            self.marker = Anchor(flat: -1)
        }

        private var markerNode: Unmanaged<Timer> { Unmanaged.passUnretained(self.marker as Timer) }

        /// Whether `timer` waits in this heap.
        func holds(_ timer: Timer) -> Bool {
            timer.next?.toOpaque() == self.markerNode.toOpaque()
        }

        /// Holds `timer` (not waiting anywhere) until its deadline.
        ///
        /// - Complexity: O(log n), amortized.
        mutating func insert(_ timer: Timer) {
            assert(!timer.isWaiting, "internal inconsistency: a timer already waiting enters the precise heap")
            timer.next = self.markerNode
            self.count += 1
            self.push(timer)
        }

        /// Gives a held timer a new deadline.
        ///
        /// - Complexity: O(log n), amortized.
        mutating func move(_ timer: Timer, to deadline: MonotonicInstant) {
            assert(self.holds(timer), "internal inconsistency: moving a timer the precise heap does not hold")
            timer.deadline = deadline
            self.push(timer)  // the old entry goes stale: its deadline no longer matches
            if self.entries.count > 2 * self.count + 64 { self.compact() }  // a timer pushed back again and again
        }

        /// Lets `timer` go; `false` when the heap did not hold it.
        ///
        /// - Complexity: O(1), amortized (its entry is dropped later).
        @discardableResult
        mutating func remove(_ timer: Timer) -> Bool {
            guard self.holds(timer) else { return false }
            timer.next = nil
            self.count -= 1
            if self.entries.count > 2 * self.count + 64 { self.compact() }
            return true
        }

        /// The earliest deadline held, or `nil` when empty; drops stale entries on top.
        mutating func earliestDeadline() -> MonotonicInstant? {
            while let top = self.entries.first {
                if self.isLive(top) { return MonotonicInstant(nanoseconds: top.deadline) }
                self.popTop()
            }
            return nil
        }

        /// Lets go of every timer due at or before `now`, appending them to `expired` in deadline
        /// order (the order they entered within one deadline is not kept).
        ///
        /// - Complexity: O((expired + stale) × log n).
        mutating func expire(upTo now: MonotonicInstant, into expired: inout [Timer]) {
            while let top = self.entries.first, top.deadline <= now.nanoseconds {
                self.popTop()
                guard self.isLive(top) else { continue }
                top.timer.next = nil
                self.count -= 1
                expired.append(top.timer)
            }
        }

        /// Lets go of every timer, handing each to `body` once.
        mutating func removeAll(_ body: (Timer) -> Void) {
            let entries = self.entries
            self.entries = []
            for entry in entries where self.holds(entry.timer) {
                entry.timer.next = nil  // so a second entry of the same timer is skipped
                body(entry.timer)
            }
            self.count = 0
        }

        // MARK: - Entries

        private func isLive(_ entry: Entry) -> Bool {
            self.holds(entry.timer) && entry.timer.deadline.nanoseconds == entry.deadline
        }

        private mutating func push(_ timer: Timer) {
            self.entries.append(Entry(deadline: timer.deadline.nanoseconds, timer: timer))
            var child = self.entries.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard self.entries[child].deadline < self.entries[parent].deadline else { break }
                self.entries.swapAt(child, parent)
                child = parent
            }
        }

        private mutating func popTop() {
            let last = self.entries.count - 1
            self.entries.swapAt(0, last)
            self.entries.removeLast()
            self.siftDown(from: 0)
        }

        private mutating func siftDown(from start: Int) {
            var parent = start
            let count = self.entries.count
            while true {
                let left = 2 * parent + 1
                guard left < count else { return }
                let right = left + 1
                let child = right < count && self.entries[right].deadline < self.entries[left].deadline ? right : left
                guard self.entries[child].deadline < self.entries[parent].deadline else { return }
                self.entries.swapAt(child, parent)
                parent = child
            }
        }

        /// Keeps one live entry per held timer and restores heap order.
        ///
        /// - Complexity: O(entries).
        private mutating func compact() {
            // A held timer's `previous` is unused: it marks "entry kept" during the pass.
            var kept: [Entry] = []
            kept.reserveCapacity(self.count)
            for entry in self.entries where self.isLive(entry) && entry.timer.previous == nil {
                entry.timer.previous = self.markerNode
                kept.append(entry)
            }
            for entry in kept { entry.timer.previous = nil }
            self.entries = kept
            for index in stride(from: self.entries.count / 2 - 1, through: 0, by: -1) { self.siftDown(from: index) }
            self.checkInvariants()
        }

        /// Walks the heap and traps if an invariant is broken. Compiled only with
        /// `SERIAL_INTERNAL_CHECKS` (opt-in); otherwise it does nothing.
        ///
        /// - Complexity: O(entries).
        func checkInvariants() {
            #if SERIAL_INTERNAL_CHECKS
            var live = Set<ObjectIdentifier>()
            for (index, entry) in self.entries.enumerated() {
                if index > 0, self.entries[(index - 1) / 2].deadline > entry.deadline {
                    fatalError("internal inconsistency: precise heap entry \(index) is earlier than its parent")
                }
                if self.isLive(entry) { live.insert(ObjectIdentifier(entry.timer)) }
            }
            if live.count != self.count {
                fatalError(
                    "internal inconsistency: the precise heap holds \(live.count) live timers, count says \(self.count)")
            }
            #endif
        }
    }
}
