import Glibc
import SerialRuntime
import SerialTestSupport
import Synchronization
import Testing

/// Thousands of receivers registering, replacing, releasing, stopping and cancelling from more
/// threads than cores, on a real `SerialQueue` ticking every millisecond. Every registration's
/// calls are checked afterwards.
@Suite struct CountdownStressTests {
    final class Target: Sendable {}

    /// What happened to one registration, as its handler and its owner thread saw it.
    struct Record {
        var calls = 0
        var finished = 0
        var cancelled = 0
        var callsAfterTerminal = 0
        var callsAfterStop = 0
        var setStop = false
        var replaced = false
        var released = false
        var cancelReturnedTrue = false
    }

    final class Tracker: Sendable {
        let records = LockedValue<[Int: Record]>([:])
        let nextID = Atomic<Int>(0)

        func newID() -> Int {
            let id = self.nextID.add(1, ordering: .relaxed).newValue
            self.records.withLock { $0[id] = Record() }
            return id
        }

        func update(_ id: Int, _ body: (inout Record) -> Void) {
            self.records.withLock { body(&$0[id, default: Record()]) }
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func thousandsOfReceiversFromManyThreadsEachEndAtMostOnce(mode: QueueMode) {
        let seed = StressConfiguration.seed()
        let threads = 6
        let receiversPerThread = 500
        let operations = StressConfiguration.iterations(1_500)
        let queue = mode.queue(label: "stress.countdown")
        let manager = CountdownManager(interval: .milliseconds(1), queue: queue)
        let tracker = Tracker()
        let threadFailures = LockedValue<[String]>([])

        runThreads(threads) { thread in
            var random = SeededRandom(seed: seed &+ UInt64(thread))
            var targets = [Target?](repeating: nil, count: receiversPerThread)
            var current = [Int?](repeating: nil, count: receiversPerThread)
            for step in 0..<operations {
                let slot = Int(random.next() % UInt64(receiversPerThread))
                switch random.next() % 8 {
                case 0, 1, 2, 3:
                    let target = targets[slot] ?? Target()
                    targets[slot] = target
                    let id = tracker.newID()
                    let stopAfter = random.next() % 4 == 0 ? Int(random.next() % 6) : -1
                    let duration = Duration.microseconds(Int64(random.next() % 20_000))
                    let outcome = manager.register(target, for: duration) { target, tick, stop in
                        tracker.update(id) { record in
                            if record.finished + record.cancelled > 0 { record.callsAfterTerminal += 1 }
                            if record.setStop { record.callsAfterStop += 1 }
                            record.calls += 1
                            switch tick.end {
                            case .finished?: record.finished += 1
                            case .cancelled?: record.cancelled += 1
                            case nil:
                                if record.calls - 1 == stopAfter {
                                    record.setStop = true
                                    stop = true
                                }
                            }
                        }
                        if tick.end == nil && id % 7 == 0 { _ = manager.remaining(for: target) }  // reentrant read
                    }
                    if outcome == .replaced, let previous = current[slot] {
                        tracker.update(previous) { $0.replaced = true }
                    }
                    current[slot] = id
                case 4:
                    if let target = targets[slot], let id = current[slot], manager.cancel(target) {
                        tracker.update(id) { $0.cancelReturnedTrue = true }
                    }
                case 5:
                    if targets[slot] != nil, let id = current[slot] {
                        tracker.update(id) { $0.released = true }
                        targets[slot] = nil
                        current[slot] = nil
                    }
                default:
                    _ = manager.contains(targets[slot] ?? Target())
                }
                if step % 16 == 0 {
                    var pause = timespec(tv_sec: 0, tv_nsec: 50_000)
                    nanosleep(&pause, nil)  // let ticks interleave with registrations
                }
            }
            // The surviving targets stay alive until every countdown has ended.
            let kept = targets
            if !eventually(timeout: .seconds(20), { manager.count == 0 }) {
                threadFailures.withLock { $0.append("thread \(thread): \(manager.count) countdowns never ended") }
            }
            withExtendedLifetime(kept) {}
        }
        #expect(threadFailures.withLock { $0 }.isEmpty, "seed \(seed): \(threadFailures.withLock { $0 })")
        queue.sync {}  // the last .cancelled calls were enqueued before this
        #expect(eventually(timeout: .seconds(10)) { manager._isTickerIdle }, "seed \(seed): ticker still armed")

        let records = tracker.records.withLock { $0 }
        #expect(records.count == tracker.nextID.load(ordering: .relaxed))
        var problems: [String] = []
        for (id, record) in records.sorted(by: { $0.key < $1.key }) {
            let terminals = record.finished + record.cancelled
            if terminals > 1 { problems.append("#\(id): \(terminals) terminal calls") }
            if record.callsAfterTerminal > 0 { problems.append("#\(id): called after its terminal call") }
            if record.replaced && terminals > 0 { problems.append("#\(id): replaced, yet got a terminal call") }
            if record.callsAfterStop > (record.cancelReturnedTrue ? 1 : 0) {
                problems.append("#\(id): called after setting stop: \(record)")
            }
            if record.cancelReturnedTrue && !record.released && record.cancelled != 1 {
                problems.append("#\(id): cancel returned true but \(record.cancelled) cancelled calls")
            }
            let plain = !record.replaced && !record.released && !record.setStop && !record.cancelReturnedTrue
            if plain && record.finished != 1 { problems.append("#\(id): never finished: \(record)") }
        }
        #expect(problems.isEmpty, "seed \(seed): \(problems.count) problems: \(problems.prefix(10))")
        _ = queue.shutdown()
    }
}
