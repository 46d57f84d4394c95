import SerialCore
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

/// RequestQueue on a real SerialQueue, against a server whose answers come from three other
/// SerialQueues, with submitters, cancellers, token expiries and shutdown racing on more threads
/// than cores. Seeded (STRESS_SEED), bounded (STRESS_SCALE), every wait with a timeout.
@Suite("RequestQueue stress on real queues")
struct RequestsStressTests {
    @Test(.serialized, arguments: QueueMode.allCases) func racingSubmittersCancellersAndExpiriesGiveExactlyOneCompletionEach(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let threads = 8
            let perThread = StressConfiguration.iterations(400)
            let total = threads * perThread
            let rig = StressRig(maximumConcurrent: 6, mode: mode)
            let tracker = CompletionTracker(total: total)
            let expiries = Atomic<Int>(0)

            runThreads(threads) { thread in
                var random = SeededRandom(seed: seed &+ UInt64(thread) &* 0x9E37_79B9)
                var previous: RequestHandle? = nil
                for step in 0..<perThread {
                    let index = thread * perThread + step
                    let handle = rig.submit(index: index, random: &random, tracker: tracker)
                    if thread % 4 == 0, random.next() % 4 == 0 { previous?.cancel() }
                    if thread == 1, step % 40 == 0 {
                        rig.server.expireToken()
                        expiries.add(1, ordering: .relaxed)
                    }
                    previous = handle
                }
            }
            let finished = tracker.allDone.wait(timeout: .seconds(60))
            #expect(
                finished,
                "seed \(seed): only \(tracker.completed) of \(total) completions within 60 s; \(rig.queue.statistics)")
            rig.stop()
            tracker.expectExactlyOnce(seed: seed)
            let statistics = rig.queue.statistics
            #expect(statistics.completed == total, "seed \(seed): \(statistics)")
            #expect(rig.queue.unfinishedCount == 0, "seed \(seed)")
            #expect(statistics.refreshesStarted <= rig.server.refreshCalls, "seed \(seed)")
            #expect(expiries.load(ordering: .relaxed) > 0)
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func shutdownRacingSubmittersEndsEveryRequestExactlyOnce(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let threads = 6
            let perThread = StressConfiguration.iterations(300)
            let total = threads * perThread
            let rig = StressRig(maximumConcurrent: 4, mode: mode)
            let tracker = CompletionTracker(total: total)

            runThreads(threads + 1) { thread in
                if thread == threads {
                    // The shutter: waits until some work is under way, then shuts the queue down.
                    _ = eventually(timeout: .seconds(10)) { tracker.completed > total / 10 }
                    rig.queue.shutdown()
                    return
                }
                var random = SeededRandom(seed: seed &+ UInt64(thread) &* 0x51ED)
                for step in 0..<perThread {
                    _ = rig.submit(index: thread * perThread + step, random: &random, tracker: tracker)
                    if step % 50 == 0 { rig.server.expireToken() }
                }
            }
            let finished = tracker.allDone.wait(timeout: .seconds(60))
            #expect(finished, "seed \(seed): only \(tracker.completed) of \(total) completions within 60 s")
            rig.stop()
            tracker.expectExactlyOnce(seed: seed)
            #expect(rig.queue.unfinishedCount == 0, "seed \(seed)")
            #expect(tracker.shutDownCount > 0, "seed \(seed): the shutdown ended no request; the race did not happen; \(rig.queue.statistics)")
        }
    }
}

/// The scheduler's queue shut down (drain or cancel pending) at a random moment while threads
/// submit and cancel and the server answers from other threads: every request submitted, before
/// or after the shutdown, completes exactly once.
@Suite("RequestQueue: scheduler shutdown stress")
struct RequestsSchedulerShutdownStressTests {
    @Test func aSchedulerShutDownAtARandomMomentCompletesEveryRequestExactlyOnce() async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let rounds = StressConfiguration.iterations(30)
            let threads = 4
            let perThread = 80
            let total = threads * perThread
            var random = SeededRandom(seed: seed)
            var endedByTheShutdown = 0
            withWatchdog(timeout: .seconds(120), "request queue shutdown stress stalled, seed \(seed)") {
                for round in 0..<rounds {
                    let mode: ShutdownMode = random.next() % 2 == 0 ? .drain : .cancelPending
                    let shutAfter = Int(random.next() % UInt64(total))
                    let roundSeed = random.next()
                    let rig = StressRig(maximumConcurrent: 4, mode: .dedicated)
                    let tracker = CompletionTracker(total: total)
                    let submitted = Atomic<Int>(0)
                    runThreads(threads + 1) { thread in
                        if thread == threads {
                            _ = eventually(timeout: .seconds(10)) { submitted.load(ordering: .acquiring) >= shutAfter }
                            _ = rig.scheduler.shutdown(mode)
                            return
                        }
                        var random = SeededRandom(seed: roundSeed &+ UInt64(thread))
                        var previous: RequestHandle? = nil
                        for step in 0..<perThread {
                            let handle = rig.submit(index: thread * perThread + step, random: &random, tracker: tracker)
                            submitted.add(1, ordering: .acquiringAndReleasing)
                            if random.next() % 5 == 0 { previous?.cancel() }
                            previous = handle
                        }
                    }
                    _ = rig.scheduler.shutdown(mode)  // a no-op when the shutter already did it
                    let context = "seed \(seed), round \(round), \(mode), shut after \(shutAfter) of \(total)"
                    let finished = tracker.allDone.wait(timeout: .seconds(10))
                    // Late answers land (and must be ignored) before the counts are read.
                    for queue in rig.server.answerQueues { _ = queue.shutdown(.drain) }
                    #expect(finished, "only \(tracker.completed) of \(total) completions; \(context)")
                    tracker.expectExactlyOnce(seed: seed)
                    #expect(rig.queue.unfinishedCount == 0, "\(context)")
                    endedByTheShutdown += tracker.schedulerShutDownCounter.load(ordering: .relaxed)
                    if !finished { return }
                }
            }
            #expect(endedByTheShutdown > 0, "seed \(seed): no request was pending at a shutdown; the race did not happen")
        }
    }
}

/// Counts completions per request; signals `allDone` when every request has completed once.
private final class CompletionTracker: Sendable {
    let total: Int
    let counts: LockedValue<[UInt8]>
    let completedCounter = Atomic<Int>(0)
    let shutDownCounter = Atomic<Int>(0)
    let schedulerShutDownCounter = Atomic<Int>(0)
    let allDone = TestSemaphore()

    init(total: Int) {
        self.total = total
        self.counts = LockedValue([UInt8](repeating: 0, count: total))
    }

    func record(_ index: Int, _ result: RequestResult<StressServer.Answer>) {
        self.counts.withLock { $0[index] &+= 1 }
        if case .failure(.shutDown) = result { self.shutDownCounter.add(1, ordering: .relaxed) }
        if case .failure(.schedulerShutDown) = result { self.schedulerShutDownCounter.add(1, ordering: .relaxed) }
        if self.completedCounter.add(1, ordering: .acquiringAndReleasing).newValue == self.total {
            self.allDone.signal()
        }
    }

    var completed: Int { self.completedCounter.load(ordering: .acquiring) }
    var shutDownCount: Int { self.shutDownCounter.load(ordering: .relaxed) }

    func expectExactlyOnce(seed: UInt64) {
        let wrong = self.counts.withLock { counts in
            counts.enumerated().filter { $0.element != 1 }.prefix(10).map { "request \($0.offset): \($0.element)" }
        }
        #expect(wrong.isEmpty, "seed \(seed): completions not exactly once: \(wrong)")
    }
}

/// The queue, its scheduler and the server, with an orderly stop.
private final class StressRig: Sendable {
    let scheduler: SerialQueue
    let server: StressServer
    let queue: RequestQueue<StressServer>

    init(maximumConcurrent: Int, mode: QueueMode) {
        self.scheduler = mode.queue(label: "req-sched")
        self.server = StressServer(mode: mode)
        let server = self.server
        let policy = RequestQueue<StressServer>.Policy(
            classify: { _, outcome in
                switch outcome {
                case .failure(let error): return .retry(error)
                case .success(let answer):
                    switch answer.status {
                    case 200: return .success
                    case 304: return .useCache
                    case 401: return .credentialExpired
                    case 503: return .retry(StressServer.Unavailable())
                    default: return .failure(StressServer.Unavailable())
                    }
                }
            },
            rebuild: { request, credential in
                StressServer.Call(statuses: request.statuses, kind: request.kind, signedWith: credential)
            },
            refresh: { _, completion in server.refresh(completion) },
            cachedResponse: { _ in StressServer.Answer(status: 200, token: -1) })
        self.queue = RequestQueue(
            transport: server, credential: 0, policy: policy,
            configuration: .init(
                maximumConcurrent: maximumConcurrent, maximumRetries: 2,
                retryBackoff: RetryBackoff(initial: .microseconds(200), maximum: .milliseconds(2)),
                maximumRedirects: 3, refreshLimit: 1000, refreshWindow: .seconds(1),
                refreshTimeout: .seconds(5), agingInterval: .milliseconds(5)),
            scheduler: self.scheduler)
    }

    func submit(index: Int, random: inout SeededRandom, tracker: CompletionTracker) -> RequestHandle {
        let statuses = [200, 200, 200, 200, 503, 401, 500, 304]
        let script = (0...(random.next() % 2)).map { _ in statuses[Int(random.next() % UInt64(statuses.count))] }
        let kinds: [RequestKind?] = [nil, nil, nil, "a", "b", "c"]
        let kind = kinds[Int(random.next() % UInt64(kinds.count))]
        let roll = random.next() % 100
        let priority: RequestPriority = roll < 2 ? .unique : roll < 30 ? .high : roll < 70 ? .default : .low
        let timeout: Duration? = random.next() % 4 == 0 ? .microseconds(500 + Int(random.next() % 5000)) : nil
        return self.queue.submit(
            StressServer.Call(statuses: script, kind: kind?.name), priority: priority, kind: kind, timeout: timeout
        ) { result in tracker.record(index, result) }
    }

    /// Shuts everything down in an order that never submits to a stopped queue.
    func stop() {
        self.queue.shutdown()
        for queue in self.server.answerQueues { queue.shutdown(.drain) }
        self.scheduler.sync {}  // effects decided before the servers stopped have run
        self.scheduler.sync {}
        self.scheduler.shutdown(.drain)
    }
}

/// A server answering from three SerialQueues after 0–1 ms; checks the credential on answering.
private final class StressServer: RequestTransport, Sendable {
    struct Call: Sendable {
        var statuses: [Int]
        var kind: String?
        var signedWith: Int? = nil
    }

    struct Answer: Sendable {
        var status: Int
        var token: Int
    }

    struct Unavailable: Error {}

    typealias Request = Call
    typealias Response = Answer
    typealias Credential = Int

    let answerQueues: [SerialQueue]

    init(mode: QueueMode) {
        self.answerQueues = (0..<3).map { mode.queue(label: "req-srv-\($0)") }
    }
    let validToken = Atomic<Int>(0)
    let issued = Atomic<Int>(0)
    let sendCounter = Atomic<Int>(0)
    let refreshCounter = Atomic<Int>(0)

    func send(_ request: Call, credential: Int, completion: @escaping @Sendable (Result<Answer, any Error>) -> Void) {
        let count = self.sendCounter.add(1, ordering: .relaxed).newValue
        let queue = self.answerQueues[count % 3]
        let status = request.statuses[min(count % 2, request.statuses.count - 1)]
        let answer: @Sendable () -> Void = {
            let valid = credential == self.validToken.load(ordering: .acquiring)
            completion(.success(Answer(status: valid ? status : 401, token: credential)))
        }
        if count % 3 == 0 {
            queue.async(answer)
        } else {
            queue.asyncAfter(delay: .microseconds(count % 1000), answer)
        }
    }

    func refresh(_ completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        let count = self.refreshCounter.add(1, ordering: .relaxed).newValue
        self.answerQueues[count % 3].asyncAfter(delay: .microseconds(300)) {
            let token = self.issued.add(1, ordering: .relaxed).newValue
            self.validToken.store(token, ordering: .releasing)
            completion(.success(token))
        }
    }

    func expireToken() {
        self.validToken.store(-1, ordering: .releasing)
    }

    var refreshCalls: Int { self.refreshCounter.load(ordering: .relaxed) }
}
