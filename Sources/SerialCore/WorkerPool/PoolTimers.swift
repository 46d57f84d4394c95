/// Wakes a pool's idle queues when their delayed work falls due: one thread that sleeps with `pthread_cond_timedwait` (CLOCK_MONOTONIC) until the earliest armed
/// deadline, and not at all while nothing is armed.
///
/// A queue arms its earliest delayed deadline when a turn leaves it idle. Each queue has at most
/// one live deadline (`armed`); a heap entry whose deadline is no longer the armed one is stale
/// and skipped, and stale entries are purged once they outnumber the live ones.
final class PoolTimers: @unchecked Sendable {  // all mutable state is guarded by `mutex`
    private struct Entry {
        let deadline: MonotonicInstant
        /// The order of arming: ties on `deadline` fall due in the order they were armed.
        let sequence: UInt64
        let id: ObjectIdentifier
        /// Dereferenced only while `armed[id] == deadline`: a queue disarms before it goes away.
        let core: Unmanaged<QueueCore>
    }

    private enum Phase {
        case notStarted, running, stopping, stopped
    }

    private let label: String
    private let mutex = PthreadMutex()
    private let changed = PthreadCondition()
    @exclusivity(unchecked) private var heap: [Entry] = []
    @exclusivity(unchecked) private var armed: [ObjectIdentifier: MonotonicInstant] = [:]
    @exclusivity(unchecked) private var phase = Phase.notStarted
    @exclusivity(unchecked) private var nextSequence: UInt64 = 0

    init(label: String) {
        self.label = label
    }

    /// Asks for `core.delayedWorkFellDue()` at `deadline`, unless an earlier wake-up is armed.
    func arm(_ deadline: MonotonicInstant, for core: QueueCore) {
        let id = ObjectIdentifier(core)
        self.mutex.lock()
        defer { self.mutex.unlock() }
        if let current = self.armed[id], current <= deadline { return }
        guard self.phase == .running else { return }
        self.armed[id] = deadline
        self.nextSequence &+= 1
        self.push(Entry(deadline: deadline, sequence: self.nextSequence, id: id, core: .passUnretained(core)))
        if self.heap.count > 2 * self.armed.count + 64 { self.purgeStale() }
        if self.heap[0].id == id && self.heap[0].deadline == deadline {
            self.changed.signal()  // a new earliest deadline: re-arm the timed wait
        }
    }

    /// Starts the timer thread; it sleeps without a deadline until something is armed.
    func start() throws(WorkerThread.StartError) {
        self.mutex.withLock { self.phase = .running }  // before the thread looks at it
        do {
            let thread = try WorkerThread(name: self.label + "-timer", fallbackName: "WorkerPool-timer") { [self] in
                self.threadMain()
            }
            thread.detach()
        } catch {
            self.mutex.withLock { self.phase = .stopped }
            throw error
        }
    }

    /// Forgets `core`'s deadline (its last turn; stale heap entries are skipped from now on).
    func disarm(_ core: QueueCore) {
        self.mutex.withLock { _ = self.armed.removeValue(forKey: ObjectIdentifier(core)) }
    }

    /// Lets the timer thread leave.
    func stop() {
        self.mutex.lock()
        switch self.phase {
        case .notStarted: self.phase = .stopped
        case .running: self.phase = .stopping
        case .stopping, .stopped: break
        }
        self.heap = []
        self.armed = [:]
        self.changed.broadcast()
        self.mutex.unlock()
    }

    func waitUntilStopped() {
        self.mutex.lock()
        while self.phase != .stopped {
            self.changed.wait(releasing: self.mutex)
        }
        self.mutex.unlock()
    }

    private func threadMain() {
        var due: [QueueCore] = []
        self.mutex.lock()
        while self.phase == .running {
            let now = MonotonicInstant.now()
            while let first = self.heap.first, first.deadline <= now {
                self.popFirst()
                guard self.armed[first.id] == first.deadline else { continue }  // stale
                self.armed[first.id] = nil
                due.append(first.core.takeUnretainedValue())  // retained under the lock: still alive
            }
            if !due.isEmpty {
                self.mutex.unlock()
                for core in due { core.delayedWorkFellDue() }
                due.removeAll(keepingCapacity: true)
                self.mutex.lock()
                continue
            }
            if let first = self.heap.first {
                self.changed.wait(releasing: self.mutex, until: first.deadline)
            } else {
                self.changed.wait(releasing: self.mutex)
            }
        }
        self.phase = .stopped
        self.changed.broadcast()
        self.mutex.unlock()
    }

    // MARK: Binary min-heap on deadline

    private func push(_ entry: Entry) {
        self.heap.append(entry)
        var child = self.heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(self.heap[child], self.heap[parent]) else { break }
            self.heap.swapAt(child, parent)
            child = parent
        }
    }

    private func popFirst() {
        let last = self.heap.removeLast()
        guard !self.heap.isEmpty else { return }
        self.heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < self.heap.count && Self.precedes(self.heap[left], self.heap[smallest]) { smallest = left }
            if right < self.heap.count && Self.precedes(self.heap[right], self.heap[smallest]) { smallest = right }
            if smallest == parent { return }
            self.heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// Earlier deadline first; on a tie, armed first (a binary heap alone would break ties in
    /// no useful order, and due work would not fall due in the order it was scheduled).
    private static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.sequence < b.sequence)
    }

    private func purgeStale() {
        let live = self.heap.filter { self.armed[$0.id] == $0.deadline }
        self.heap = []
        for entry in live { self.push(entry) }
    }
}
