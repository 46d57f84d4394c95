import SerialCore
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

/// What one poller under stress did, as seen from its callbacks and its simulated server.
private final class PollProbe: Sendable {
    let checksInFlight: Bool
    let outcomes = Atomic<Int>(0)
    let updatesAfterOutcome = Atomic<Int>(0)
    let updatesNotIncreasing = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    let maxInFlight = Atomic<Int>(0)
    let cancelWon = Atomic<Bool>(false)
    let offQueueCallbacks = Atomic<Int>(0)
    let record = LockedValue<(outcome: String?, lastUpdate: Int?)>((nil, nil))

    init(checksInFlight: Bool) {
        self.checksInFlight = checksInFlight
    }

    func queryStarted() {
        let now = self.inFlight.add(1, ordering: .acquiringAndReleasing).newValue
        var seen = self.maxInFlight.load(ordering: .relaxed)
        while now > seen {
            let (exchanged, original) = self.maxInFlight.compareExchange(
                expected: seen, desired: now, ordering: .relaxed)
            if exchanged { break }
            seen = original
        }
    }

    func queryAnswered() { self.inFlight.subtract(1, ordering: .acquiringAndReleasing) }

    func update(_ value: Int, onQueue: Bool) {
        if !onQueue { self.offQueueCallbacks.add(1, ordering: .relaxed) }
        let bad = self.record.withLock { record -> (afterOutcome: Bool, notIncreasing: Bool) in
            defer { record.lastUpdate = value }
            return (record.outcome != nil, record.lastUpdate.map { value <= $0 } ?? false)
        }
        if bad.afterOutcome { self.updatesAfterOutcome.add(1, ordering: .relaxed) }
        if bad.notIncreasing { self.updatesNotIncreasing.add(1, ordering: .relaxed) }
    }

    func outcome(_ outcome: PollOutcome<Int>, onQueue: Bool) {
        if !onQueue { self.offQueueCallbacks.add(1, ordering: .relaxed) }
        let kind: String
        switch outcome {
        case .completed: kind = "completed"
        case .failed: kind = "failed"
        case .timedOut: kind = "timedOut"
        case .cancelled: kind = "cancelled"
        case .schedulerShutDown: kind = "schedulerShutDown"
        }
        self.record.withLock { $0.outcome = kind }
        self.outcomes.add(1, ordering: .acquiringAndReleasing)
    }

    var outcomeKind: String? { self.record.withLock { $0.outcome } }
}

private struct StressServerError: Error {}

/// A job whose progress grows by random steps, answering after random latencies from server
/// queues (other threads), sometimes inline, sometimes twice, sometimes with an error.
private final class StressJob: Sendable {
    let random: LockedValue<SeededRandom>
    let progress = LockedValue(0)
    let servers: [SerialQueue]
    let probe: PollProbe

    init(seed: UInt64, servers: [SerialQueue], probe: PollProbe) {
        self.random = LockedValue(SeededRandom(seed: seed))
        self.servers = servers
        self.probe = probe
    }

    /// Draws the next answer: its value (computed now, at the query's start), latency, form.
    func draw() -> (result: Result<Int, any Error>, latencyMicroseconds: Int64, inline: Bool, twice: Bool, server: Int) {
        let (roll, step, latency, server) = self.random.withLock { random in
            (Int.random(in: 0..<100, using: &random), Int.random(in: 0...30, using: &random),
             Int64.random(in: 0...4000, using: &random), Int.random(in: 0..<self.servers.count, using: &random))
        }
        let value = self.progress.withLock { progress in
            progress = min(100, progress + step)
            return progress
        }
        let result: Result<Int, any Error> = roll < 15 ? .failure(StressServerError()) : .success(value)
        return (result, latency, roll >= 90, roll % 10 == 3, server)
    }

    func completionQuery(_ attempt: PollAttempt, _ reply: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        self.probe.queryStarted()
        let answer = self.draw()
        if answer.inline {
            self.probe.queryAnswered()
            reply(answer.result)
            return
        }
        self.servers[answer.server].asyncAfter(delay: .microseconds(answer.latencyMicroseconds)) {
            self.probe.queryAnswered()
            reply(answer.result)
            if answer.twice { reply(.success(100)) }  // a duplicate must never count
        }
    }

    func asyncQuery() async throws -> Int {
        self.probe.queryStarted()
        let answer = self.draw()
        return try await withCheckedThrowingContinuation { continuation in
            self.servers[answer.server].asyncAfter(delay: .microseconds(answer.latencyMicroseconds)) {
                self.probe.queryAnswered()
                continuation.resume(with: answer.result)
            }
        }
    }
}

/// Many pollers on few real queues, simulated servers answering from other threads with random
/// latencies, random cancels racing responses and timeouts. Seeded (`STRESS_SEED`), bounded
/// (`STRESS_SCALE`), barrier-started, every wait with a timeout, under a watchdog.
@Suite("Polling stress")
struct PollingStressTests {
    static let threads = 6  // three times the cores

    // Async: its pollers' async queries need Swift concurrency's pool, so its long waits happen
    // off the pool (two blocked cooperative threads would stall every query on 2 cores).
    @Test(.serialized, arguments: QueueMode.allCases) func manyPollersOnFewQueuesEachEndExactlyOnce(mode: QueueMode) async {
        let seed = StressConfiguration.seed()
        let perThread = StressConfiguration.iterations(100)
        let total = Self.threads * perThread
        let pollQueues = (0..<3).map { mode.queue(label: "poll-\($0)") }
        let servers = (0..<2).map { mode.queue(label: "server-\($0)") }
        let canceller = mode.queue(label: "canceller")
        let probes = LockedValue<[(probe: PollProbe, job: StressJob)]>([])
        let pollers = LockedValue<[Poller<Int>]>([])
        let ended = TestSemaphore()

        await withWatchdog(timeout: .seconds(120), "polling stress stalled (\(mode)), seed \(seed)") {
            await runThreads(Self.threads) { thread in
                var random = SeededRandom(seed: seed &+ UInt64(thread) &* 7919)
                for index in 0..<perThread {
                    let queue = pollQueues[Int.random(in: 0..<pollQueues.count, using: &random)]
                    let withTimeout = random.next() % 3 == 0
                    let policy = PollPolicy(
                        interval: .milliseconds(Int64.random(in: 1...5, using: &random)),
                        startsImmediately: random.next() % 4 != 0,
                        attemptTimeout: withTimeout ? .microseconds(Int64.random(in: 1000...5000, using: &random)) : nil,
                        deadline: random.next() % 2 == 0 ? .milliseconds(Int64.random(in: 10...60, using: &random)) : nil,
                        backoff: .init(minimumDelay: .milliseconds(1), maximumDelay: .milliseconds(4), maximumConsecutiveErrors: 3))
                    let probe = PollProbe(checksInFlight: !withTimeout)
                    let job = StressJob(seed: seed &+ UInt64(thread * 100_000 + index), servers: servers, probe: probe)
                    let measure: @Sendable (Int) -> Double = { Double($0) }
                    let poller: Poller<Int>
                    if random.next() % 4 == 0 {
                        poller = Poller<Int>(
                            policy: policy, scheduler: queue, random: SeededRandom(seed: random.next()),
                            isDone: { $0 >= 100 }, changes: .equality, progress: measure,
                            query: .async { try await job.asyncQuery() })
                    } else {
                        poller = Poller<Int>(
                            policy: policy, scheduler: queue, random: SeededRandom(seed: random.next()),
                            isDone: { $0 >= 100 }, changes: .equality, progress: measure,
                            query: .completion(job.completionQuery))
                    }
                    probes.withLock { $0.append((probe, job)) }
                    pollers.withLock { $0.append(poller) }
                    poller.start(
                        onUpdate: { probe.update($0, onQueue: queue.isCurrent) },
                        onOutcome: { outcome in
                            probe.outcome(outcome, onQueue: queue.isCurrent)
                            ended.signal()
                        })
                    switch random.next() % 10 {
                    case 0, 1:  // cancel from another thread, racing whatever is in flight
                        canceller.asyncAfter(delay: .microseconds(Int64.random(in: 0...20_000, using: &random))) {
                            if poller.cancel() { probe.cancelWon.store(true, ordering: .releasing) }
                        }
                    case 2:  // cancel right away, from the starting thread
                        if poller.cancel() { probe.cancelWon.store(true, ordering: .releasing) }
                    default:
                        break
                    }
                }
            }
            let missing = await offThePool {
                var missing = 0
                for _ in 0..<total where !ended.wait(timeout: .seconds(60)) { missing += 1 }
                return missing
            }
            #expect(missing == 0, "\(missing) of \(total) pollers never delivered an outcome, seed \(seed)")
        }
        // Let late answers and cancels land, then flush every delivery still queued.
        canceller.shutdown()
        for server in servers { server.shutdown() }
        for queue in pollQueues { queue.sync {} }

        let all = probes.withLock { $0 }
        #expect(all.count == total)
        var kinds: [String: Int] = [:]
        for (index, (probe, job)) in all.enumerated() {
            let outcome = probe.outcomeKind ?? "none"
            kinds[outcome, default: 0] += 1
            let context = "poller \(index) (\(outcome)), seed \(seed)"
            #expect(probe.outcomes.load(ordering: .acquiring) == 1, "not exactly one outcome: \(context)")
            #expect(probe.updatesAfterOutcome.load(ordering: .relaxed) == 0, "update after the outcome: \(context)")
            #expect(probe.updatesNotIncreasing.load(ordering: .relaxed) == 0, "stale or unchanged update: \(context)")
            #expect(probe.offQueueCallbacks.load(ordering: .relaxed) == 0, "callback off its queue: \(context)")
            #expect(probe.cancelWon.load(ordering: .acquiring) == (outcome == "cancelled"), "cancel() lied: \(context)")
            if outcome == "completed" {
                // Only a genuine answer of 100 may complete a poll (a duplicate "100" must not).
                #expect(job.progress.withLock { $0 } == 100, "completed early: \(context)")
            }
            if probe.checksInFlight {
                #expect(probe.maxInFlight.load(ordering: .relaxed) <= 1, "two queries in flight: \(context)")
            }
        }
        #expect(pollers.withLock { $0.allSatisfy { !$0.isRunning } }, "a poller still runs, seed \(seed)")
        // The mix must really exercise every ending, or the test proves less than it claims.
        #expect(kinds.keys.count >= 3, "outcomes \(kinds), seed \(seed)")
    }

    @Test(.serialized, arguments: QueueMode.allCases) func cancelRacingAnInlineAnswerLeavesExactlyOneOutcome(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let rounds = StressConfiguration.iterations(300)
            let queue = mode.queue(label: "poll-race")
            let mismatches = TestCounter()
            let doubles = TestCounter()
            withWatchdog(timeout: .seconds(120), "cancel/answer race stalled, seed \(seed)") {
                for _ in 0..<rounds {
                    let outcomes = TestCounter()
                    let ended = TestSemaphore()
                    let replies = LockedValue<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
                    let asked = TestSemaphore()
                    let poller = Poller<Int>(
                        policy: PollPolicy(interval: .milliseconds(1)), scheduler: queue, isDone: { $0 >= 100 },
                        changes: .equality,
                        query: .completion { _, reply in
                            replies.withLock { $0 = reply }
                            asked.signal()
                        })
                    poller.start(onOutcome: { _ in
                        outcomes.increment()
                        ended.signal()
                    })
                    guard asked.wait(timeout: .seconds(10)) else {
                        Issue.record("the query never started, seed \(seed)")
                        return
                    }
                    let reply = replies.withLock { $0 }!
                    let cancelWon = TestFlag()
                    // Two threads released together: one answers "done", one cancels.
                    runThreads(2) { side in
                        if side == 0 {
                            reply(.success(100))
                        } else if poller.cancel() {
                            cancelWon.set()
                        }
                    }
                    guard ended.wait(timeout: .seconds(10)) else {
                        Issue.record("no outcome after a cancel/answer race, seed \(seed)")
                        return
                    }
                    queue.sync {}
                    replies.withLock { $0 = nil }  // the reply captures the poller, whose query captures `replies`
                    if outcomes.value != 1 { doubles.increment() }
                    let cancelled: Bool
                    switch poller.outcome {
                    case .cancelled?: cancelled = true
                    default: cancelled = false
                    }
                    if cancelled != cancelWon.isSet { mismatches.increment() }
                }
            }
            #expect(doubles.value == 0, "a race produced two outcomes, seed \(seed)")
            #expect(mismatches.value == 0, "cancel()'s result disagreed with the outcome, seed \(seed)")
        }
    }
}

/// The pollers' queue shut down (drain or cancel pending) at a random moment while threads start
/// and cancel sessions and servers answer from other threads: every session, started before or
/// after the shutdown, gets exactly one outcome, its last callback.
@Suite("Polling: scheduler shutdown stress")
struct PollingSchedulerShutdownStressTests {
    /// One session's callbacks, as counted.
    final class Session: Sendable {
        let outcomes = Atomic<Int>(0)
        let updatesAfterOutcome = Atomic<Int>(0)
        let endedByShutdown = Atomic<Bool>(false)
    }

    // Async, with its waits off the pool: its async queries need Swift concurrency's pool.
    @Test func aSchedulerShutDownAtARandomMomentEndsEverySessionExactlyOnce() async {
        let seed = StressConfiguration.seed()
        let rounds = StressConfiguration.iterations(30)
        let threads = 4
        let perThread = 25
        let total = threads * perThread
        let servers = (0..<2).map { SerialQueue(label: "poll-down-srv-\($0)") }
        var random = SeededRandom(seed: seed)
        var endedByTheShutdown = 0
        await withWatchdog(timeout: .seconds(120), "poller shutdown stress stalled, seed \(seed)") {
            for round in 0..<rounds {
                let mode: ShutdownMode = random.next() % 2 == 0 ? .drain : .cancelPending
                let shutAfter = Int(random.next() % UInt64(total))
                let roundSeed = random.next()
                let queue = SerialQueue(label: "poll-down")
                let sessions = LockedValue<[Session]>([])
                let started = Atomic<Int>(0)
                let pollers = LockedValue<[Poller<Int>]>([])
                await runThreads(threads + 1) { thread in
                    if thread == threads {
                        _ = eventually(timeout: .seconds(10)) { started.load(ordering: .acquiring) >= shutAfter }
                        _ = queue.shutdown(mode)
                        return
                    }
                    var random = SeededRandom(seed: roundSeed &+ UInt64(thread))
                    for _ in 0..<perThread {
                        let progress = LockedValue(0)
                        let step = Int(random.next() % 10)
                        let latency = Int64(random.next() % 3_000)
                        let server = servers[Int(random.next() % UInt64(servers.count))]
                        let policy = PollPolicy(
                            interval: .milliseconds(Int64(1 + random.next() % 3)),
                            attemptTimeout: random.next() % 3 == 0 ? .milliseconds(2) : nil,
                            backoff: .init(minimumDelay: .milliseconds(1), maximumDelay: .milliseconds(2), maximumConsecutiveErrors: 3))
                        let next: @Sendable () -> Int = { progress.withLock { $0 = min(100, $0 + step); return $0 } }
                        let poller: Poller<Int>
                        if random.next() % 4 == 0 {
                            poller = Poller<Int>(
                                policy: policy, scheduler: queue, isDone: { $0 >= 100 }, changes: .equality,
                                query: .async {
                                    try await withCheckedThrowingContinuation { continuation in
                                        server.asyncAfter(delay: .microseconds(latency)) {
                                            continuation.resume(returning: next())
                                        }
                                    }
                                })
                        } else {
                            poller = Poller<Int>(
                                policy: policy, scheduler: queue, isDone: { $0 >= 100 }, changes: .equality,
                                query: .completion { _, reply in
                                    if latency % 5 == 0 {
                                        reply(.success(next()))  // inline
                                    } else {
                                        server.asyncAfter(delay: .microseconds(latency)) { reply(.success(next())) }
                                    }
                                })
                        }
                        let session = Session()
                        sessions.withLock { $0.append(session) }
                        pollers.withLock { $0.append(poller) }
                        poller.start(
                            onUpdate: { _ in
                                if session.outcomes.load(ordering: .acquiring) > 0 {
                                    session.updatesAfterOutcome.add(1, ordering: .relaxed)
                                }
                            },
                            onOutcome: { outcome in
                                if case .schedulerShutDown = outcome {
                                    session.endedByShutdown.store(true, ordering: .relaxed)
                                }
                                session.outcomes.add(1, ordering: .acquiringAndReleasing)
                            })
                        started.add(1, ordering: .acquiringAndReleasing)
                        if random.next() % 6 == 0 { poller.cancel() }
                    }
                }
                _ = queue.shutdown(mode)  // a no-op when the shutter already did it
                let context = "seed \(seed), round \(round), \(mode), shut after \(shutAfter) of \(total)"
                let all = sessions.withLock { $0 }
                let done = await eventually(timeout: .seconds(10)) { all.allSatisfy { $0.outcomes.load(ordering: .acquiring) > 0 } }
                // Late answers land (and must change nothing) before the counts are read.
                for server in servers { server.sync {} }
                let counts = all.map { $0.outcomes.load(ordering: .acquiring) }
                #expect(done, "\(counts.count { $0 == 0 }) sessions got no outcome; \(context)")
                #expect(counts.allSatisfy { $0 <= 1 }, "sessions with several outcomes: \(counts.count { $0 > 1 }); \(context)")
                #expect(all.allSatisfy { $0.updatesAfterOutcome.load(ordering: .relaxed) == 0 }, "update after outcome; \(context)")
                #expect(pollers.withLock { $0.allSatisfy { !$0.isRunning } }, "a poller still runs; \(context)")
                endedByTheShutdown += all.count { $0.endedByShutdown.load(ordering: .relaxed) }
                if !done { return }
            }
        }
        // The servers are not shut down: an async query's task may still be on its way to one.
        // Released, they finish what they hold and exit.
        #expect(endedByTheShutdown > 0, "seed \(seed): no session was running at a shutdown; the race did not happen")
    }
}
