#if SERIAL_SIMULATION
@testable import SerialCore
import SerialTesting

/// What a scenario's work records. Unlocked on purpose: in a simulation one thread runs at a
/// time and each hand-off orders memory, so a lock here would only add scheduling points; the
/// queues under test are what must keep these accesses apart.
final class ScenarioLog: @unchecked Sendable {  // simulated threads only, one at a time
    var entries: [Int] = []
    var inBody = 0
    var mostInBody = 0

    /// Marks a body running across a scheduling point (a clock read), so that a second owner
    /// would be seen.
    func body(_ entry: Int) {
        self.inBody += 1
        self.mostInBody = max(self.mostInBody, self.inBody)
        _ = MonotonicInstant.now()
        self.entries.append(entry)
        self.inBody -= 1
    }
}

/// Reads the clock (a scheduling point each, 1 µs of virtual time) until `watchdog` has begun
/// its first look, or 5,000 reads: the look may then be under way or over.
func waitForFirstLook(of watchdog: StallWatchdog) {
    var reads = 0
    while watchdog._lookCount == 0 && reads < 5_000 {
        _ = MonotonicInstant.now()
        reads += 1
    }
}

/// A hand-off with the classic lost wake-up, built from the seam's own mutex and condition: the
/// taker checks the flag and waits in two separate critical sections, so a post between them
/// signals nobody and the taker sleeps forever. The simulator must find it.
final class LostWakeUpMailbox: @unchecked Sendable {  // `posted` is guarded by `mutex`
    private let mutex = PthreadMutex()
    private let posted = PthreadCondition()
    private var isPosted = false

    func post() {
        self.mutex.withLock { self.isPosted = true }
        self.posted.signal()
    }

    func take() {
        let seen = self.mutex.withLock { self.isPosted }
        guard !seen else { return }
        self.mutex.lock()  // BUG: the flag may have been set since it was read
        self.posted.wait(releasing: self.mutex)
        self.mutex.unlock()
    }
}

/// The same hand-off, correct: check and wait under one lock.
final class Mailbox: @unchecked Sendable {  // `posted` is guarded by `mutex`
    private let mutex = PthreadMutex()
    private let posted = PthreadCondition()
    private var isPosted = false

    func post() {
        self.mutex.withLock { self.isPosted = true }
        self.posted.signal()
    }

    func take() {
        self.mutex.lock()
        while !self.isPosted { self.posted.wait(releasing: self.mutex) }
        self.mutex.unlock()
    }
}

/// Scenarios shared by the tests.
enum Scenarios {
    /// `producers` queues each send `items` to one target queue, alternating async and sync;
    /// each producer's items must run in order, one body at a time.
    static func producersKeepFIFO(producers: Int, items: Int) -> @Sendable () -> Void {
        {
            let target = SerialQueue(label: "sim-target")
            let log = ScenarioLog()
            let queues = (0..<producers).map { SerialQueue(label: "sim-producer-\($0)") }
            for (producer, queue) in queues.enumerated() {
                queue.async {
                    for item in 0..<items {
                        let entry = producer * 1_000 + item
                        if item % 2 == 0 {
                            target.async { log.body(entry) }
                        } else {
                            target.sync { log.body(entry) }
                        }
                    }
                }
            }
            for queue in queues { queue.sync {} }
            target.sync {}
            Simulation.check(log.entries.count == producers * items, "ran \(log.entries.count) items: \(log.entries)")
            Simulation.check(log.mostInBody == 1, "\(log.mostInBody) bodies ran at once")
            for producer in 0..<producers {
                let mine = log.entries.filter { $0 / 1_000 == producer }
                Simulation.check(mine == mine.sorted(), "producer \(producer) out of order: \(mine)")
            }
        }
    }

    /// Async work then a sync on the same queue, from a queue and from the scenario's thread:
    /// the sync must find the async work done, and nobody may sleep through its wake-up.
    static let asyncThenSync: @Sendable () -> Void = {
        let queue = SerialQueue(label: "sim-wake")
        let other = SerialQueue(label: "sim-other")
        let log = ScenarioLog()
        for round in 0..<3 {
            queue.async { log.body(round) }
            other.async { queue.sync { log.body(100 + round) } }
            let seen = queue.sync { log.entries.contains(round) }
            Simulation.check(seen, "round \(round): sync ran before the earlier async work")
        }
        other.sync {}
        Simulation.check(log.entries.count == 6, "ran \(log.entries)")
    }

    /// A wrong expectation on purpose: work from two producers has no order between them, so
    /// the check fails under some interleavings only.
    static let crossProducerOrder: @Sendable () -> Void = {
        let target = SerialQueue(label: "sim-target")
        let producer = SerialQueue(label: "sim-producer")
        let log = ScenarioLog()
        producer.async { target.async { log.body(1) } }
        target.async { log.body(2) }
        producer.sync {}
        target.sync {}
        Simulation.check(log.entries == [2, 1], "order: \(log.entries)")
    }

    /// Two pooled queues on a two-thread pool, each fed async work and then a sync: each queue
    /// runs its items in order, one body at a time (the two queues may overlap each other).
    static let pooledQueues: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 2, label: "sim-pool")
        let queues = [SerialQueue(label: "sim-pooled-a", pool: pool), SerialQueue(label: "sim-pooled-b", pool: pool)]
        let logs = [ScenarioLog(), ScenarioLog()]
        for item in 0..<3 {
            for (queue, log) in zip(queues, logs) { queue.async { log.body(item) } }
        }
        for (queue, log) in zip(queues, logs) { queue.sync { log.body(3) } }
        for (index, log) in logs.enumerated() {
            Simulation.check(log.entries == [0, 1, 2, 3], "queue \(index) ran \(log.entries)")
            Simulation.check(log.mostInBody == 1, "queue \(index): \(log.mostInBody) bodies ran at once")
        }
    }

    static let lostWakeUp: @Sendable () -> Void = {
        let mailbox = LostWakeUpMailbox()
        let poster = SerialQueue(label: "sim-poster")
        poster.async { mailbox.post() }
        mailbox.take()
    }

    static let mailbox: @Sendable () -> Void = {
        let mailbox = Mailbox()
        let poster = SerialQueue(label: "sim-poster")
        poster.async { mailbox.post() }
        mailbox.take()
    }
}
#endif
