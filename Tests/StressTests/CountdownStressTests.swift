import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
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
        /// Every terminal call's reason, in order (exactly one is expected).
        var ends: [CountdownEnd] = []
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

    @Test(.serialized, arguments: QueueMode.allCases) func thousandsOfReceiversFromManyThreadsEachEndExactlyOnce(mode: QueueMode) async {
        await stressBody {
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
                // Every registration of the slot's current target: a release may beat any of their
                // queued terminal calls (a released receiver gets none).
                var registered = [[Int]](repeating: [], count: receiversPerThread)
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
                                if !record.ends.isEmpty { record.callsAfterTerminal += 1 }
                                if record.setStop && !tick.isFinal { record.callsAfterStop += 1 }
                                record.calls += 1
                                if let end = tick.end {
                                    record.ends.append(end)
                                } else if record.calls - 1 == stopAfter {
                                    record.setStop = true
                                    stop = true
                                }
                            }
                            if tick.end == nil && id % 7 == 0 { _ = manager.remaining(for: target) }  // reentrant read
                        }
                        if outcome == .replaced, let previous = current[slot] {
                            tracker.update(previous) { $0.replaced = true }
                        }
                        current[slot] = id
                        registered[slot].append(id)
                    case 4:
                        if let target = targets[slot], let id = current[slot], manager.cancel(target) {
                            tracker.update(id) { $0.cancelReturnedTrue = true }
                        }
                    case 5:
                        if targets[slot] != nil, current[slot] != nil {
                            for id in registered[slot] { tracker.update(id) { $0.released = true } }
                            registered[slot] = []
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
                queue.sync {}  // the `.cancelled` and `.replaced` calls queued before this reach live receivers
                withExtendedLifetime(kept) {}
            }
            #expect(threadFailures.withLock { $0 }.isEmpty, "seed \(seed): \(threadFailures.withLock { $0 })")
            queue.sync {}  // the last .cancelled calls were enqueued before this
            #expect(eventually(timeout: .seconds(10)) { manager._isTickerIdle }, "seed \(seed): ticker still armed")
            let statistics = manager.serviceStatistics
            #expect(
                statistics.pending == 0 && statistics.accepted == statistics.ended,
                "seed \(seed): service statistics \(statistics)")

            let records = tracker.records.withLock { $0 }
            #expect(records.count == tracker.nextID.load(ordering: .relaxed))
            var problems: [String] = []
            for (id, record) in records.sorted(by: { $0.key < $1.key }) {
                let terminals = record.ends.count
                if terminals > 1 { problems.append("#\(id): \(terminals) terminal calls: \(record.ends)") }
                if record.callsAfterTerminal > 0 { problems.append("#\(id): called after its terminal call") }
                // A released receiver may have ended before its release, or get no call at all.
                if !record.released && terminals != 1 {
                    problems.append("#\(id): \(terminals) terminal calls, receiver alive: \(record)")
                }
                if record.replaced && !record.released && record.ends != [.replaced] {
                    problems.append("#\(id): replaced, yet ended with \(record.ends)")
                }
                if record.callsAfterStop > 0 { problems.append("#\(id): tick call after setting stop: \(record)") }
                if record.cancelReturnedTrue && !record.released && record.ends != [.cancelled] {
                    problems.append("#\(id): cancel returned true but ended with \(record.ends)")
                }
                if record.setStop && !record.released && !record.cancelReturnedTrue && !record.replaced
                    && record.ends != [.stopped]
                {
                    problems.append("#\(id): set stop but ended with \(record.ends)")
                }
                let plain = !record.replaced && !record.released && !record.setStop && !record.cancelReturnedTrue
                if plain && record.ends != [.finished] { problems.append("#\(id): never finished: \(record)") }
            }
            #expect(problems.isEmpty, "seed \(seed): \(problems.count) problems: \(problems.prefix(10))")
            _ = queue.shutdown()
        }
    }
}

/// The queue shut down (drain or cancel pending) at a random moment while threads register,
/// replace and cancel countdowns: every registration, including those refused after the
/// shutdown, gets exactly one terminal call.
@Suite struct CountdownShutdownStressTests {
    final class Target: Sendable {}

    @Test func aQueueShutDownAtARandomMomentEndsEveryCountdownExactlyOnce() async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let rounds = StressConfiguration.iterations(40)
            let threads = 4
            let perThread = 60
            var random = SeededRandom(seed: seed)
            var endedByTheShutdown = 0
            withWatchdog(timeout: .seconds(120), "countdown shutdown stress stalled, seed \(seed)") {
                for round in 0..<rounds {
                    let mode: ShutdownMode = random.next() % 2 == 0 ? .drain : .cancelPending
                    let shutAfter = Int(random.next() % UInt64(threads * perThread))
                    let roundSeed = random.next()
                    let queue = SerialQueue(label: "stress.cd.down")
                    let manager = CountdownManager(interval: .milliseconds(1), queue: queue)
                    // Terminal calls per registration, by registration number.
                    let terminals = LockedValue<[Int: [CountdownEnd]]>([:])
                    let registered = Atomic<Int>(0)
                    let targets = LockedValue<[Target]>([])  // every receiver lives to the end: none is released

                    runThreads(threads + 1) { thread in
                        if thread == threads {
                            // The shutter: waits for its moment, then shuts the queue down.
                            _ = eventually(timeout: .seconds(10)) { registered.load(ordering: .acquiring) >= shutAfter }
                            _ = queue.shutdown(mode)
                            return
                        }
                        var random = SeededRandom(seed: roundSeed &+ UInt64(thread))
                        var mine: [Target] = []
                        for _ in 0..<perThread {
                            let reuse = !mine.isEmpty && random.next() % 4 == 0
                            let target = reuse ? mine[Int(random.next() % UInt64(mine.count))] : Target()
                            if !reuse { mine.append(target) }
                            let id = registered.add(1, ordering: .acquiringAndReleasing).newValue
                            manager.register(target, for: .microseconds(Int64(random.next() % 5_000))) { _, tick, _ in
                                guard let end = tick.end else { return }
                                terminals.withLock { $0[id, default: []].append(end) }
                            }
                            if random.next() % 8 == 0 { manager.cancel(mine[Int(random.next() % UInt64(mine.count))]) }
                        }
                        targets.withLock { $0.append(contentsOf: mine) }
                    }
                    _ = queue.shutdown(mode)  // a no-op if the shutter already did it
                    let total = registered.load(ordering: .acquiring)
                    let ended = terminals.withLock { $0 }
                    let missing = (1...total).filter { ended[$0] == nil }
                    let twice = ended.filter { $0.value.count != 1 }
                    let context = "seed \(seed), round \(round), \(mode), shut after \(shutAfter) of \(total)"
                    #expect(missing.isEmpty, "\(missing.count) countdowns got no terminal call, e.g. \(missing.prefix(5)); \(context)")
                    #expect(twice.isEmpty, "countdowns with several terminal calls: \(twice.prefix(5)); \(context)")
                    #expect(manager.count == 0, "\(context)")
                    #expect(manager.releasedReceiverCount == 0, "\(context)")
                    endedByTheShutdown += ended.values.count { if case .shutDown = $0.first { true } else { false } }
                    if !missing.isEmpty || !twice.isEmpty { return }
                    withExtendedLifetime(targets) {}
                }
            }
            #expect(endedByTheShutdown > 0, "seed \(seed): no countdown was pending at a shutdown; the race did not happen")
        }
    }
}
