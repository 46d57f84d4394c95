import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

/// State touched only from inside one queue's work, deliberately without a lock: the queue's
/// own ordering must make it race-free (ThreadSanitizer checks that in CI).
private final class Unguarded<Value>: @unchecked Sendable {  // guarded by the queue under test
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Detects two pieces of a queue's work running at once.
private final class OwnerCheck: Sendable {
    private let inside = Atomic<Int>(0)
    private let overlaps = Atomic<Int>(0)

    func enter() {
        if self.inside.add(1, ordering: .acquiringAndReleasing).newValue != 1 {
            self.overlaps.add(1, ordering: .relaxed)
        }
    }

    func leave() { self.inside.subtract(1, ordering: .acquiringAndReleasing) }

    var overlapCount: Int { self.overlaps.load(ordering: .relaxed) }
}

/// Seeded, bounded scenarios. `STRESS_SEED` replays a seed, `STRESS_SCALE` multiplies the
/// iterations; every wait has a timeout and every scenario runs under a watchdog.
@Suite("SerialQueue stress")
struct SerialQueueStressTests {
    static let producers = 6  // three times the cores

    @Test(.serialized, arguments: QueueMode.allCases) func manyProducersMixingSyncAndAsyncKeepOneOrderAndOneOwner(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perProducer = StressConfiguration.iterations(5_000)
            let queue = mode.queue(label: "stress-mix")
            let log = Unguarded<[Int: [Int]]>([:])
            let owner = OwnerCheck()
            withWatchdog(timeout: .seconds(120), "mixed sync/async producers stalled, seed \(seed)") {
                runThreads(Self.producers) { producer in
                    var random = SeededRandom(seed: seed &+ UInt64(producer))
                    for step in 0..<perProducer {
                        let record: @Sendable () -> Void = {
                            owner.enter()
                            log.value[producer, default: []].append(step)
                            owner.leave()
                        }
                        if random.next() % 3 == 0 { queue.sync { record() } } else { queue.async(record) }
                    }
                }
            }
            let final = queue.sync { log.value }
            #expect(owner.overlapCount == 0, "two works ran at once, seed \(seed)")
            for producer in 0..<Self.producers {
                #expect(final[producer] == Array(0..<perProducer), "producer \(producer) lost or reordered work, seed \(seed)")
            }
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func asyncThenSyncRoundsNeverLoseAWakeUp(mode: QueueMode) {
        let seed = StressConfiguration.seed()
        let rounds = StressConfiguration.iterations(5_000)
        let queue = mode.queue(label: "stress-rounds")
        let counter = Unguarded(0)
        let stale = TestCounter()
        let lost = TestCounter()
        withWatchdog(timeout: .seconds(120), "async-then-sync rounds stalled (lost wake-up?), seed \(seed)") {
            runThreads(Self.producers) { thread in
                var random = SeededRandom(seed: seed &+ UInt64(thread))
                let ran = TestSemaphore()
                var mine = 0
                for _ in 0..<rounds {
                    mine += 1
                    if random.next() % 2 == 0 {
                        // Wait for the async work itself, submitting nothing else: a wake-up lost
                        // while another thread held the queue in a sync body shows up here.
                        queue.async { counter.value += 1; ran.signal() }
                        if !ran.wait(timeout: .seconds(10)) { lost.increment(); return }
                    } else {
                        queue.async { counter.value += 1 }
                        // The sync must see this thread's async work: it entered the FIFO earlier.
                        let seen = queue.sync { counter.value }
                        if seen < mine { stale.increment() }
                    }
                }
            }
        }
        #expect(lost.value == 0, "async work never ran without a later submission (lost wake-up), seed \(seed)")
        #expect(stale.value == 0, "a sync ran before earlier async work of its thread, seed \(seed)")
        #expect(queue.sync { counter.value } == Self.producers * rounds, "async work lost, seed \(seed)")
    }

    @Test(.serialized, arguments: QueueMode.allCases) func queuesCreatedAndDroppedInALoopLeaveNoThread(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perThread = StressConfiguration.iterations(150)
            let ran = TestCounter()
            let expected = TestCounter()
            withWatchdog(timeout: .seconds(120), "queue churn stalled, seed \(seed)") {
                runThreads(4) { thread in
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    for _ in 0..<perThread {
                        let queue = mode.queue(label: "churn-\(thread)")
                        let works = Int(random.next() % 20)
                        for _ in 0..<works { queue.async { ran.increment() } }
                        expected.increment(by: works)
                        if random.next() % 2 == 0 { _ = queue.sync { ran.increment() }; expected.increment() }
                        if random.next() % 3 == 0 { queue.asyncAfter(delay: .seconds(3600)) { ran.increment() } }
                        if random.next() % 4 == 0 { queue.shutdown(random.next() % 2 == 0 ? .drain : .cancelPending) }
                        // Dropped here: enqueued work runs, the thread ends before the release returns.
                    }
                }
            }
            // Every release joined its worker; the kernel drops joined tasks from /proc a moment later.
            var leftovers: [String] = []
            _ = eventually {
                leftovers = currentThreadNames().filter { $0.hasPrefix("churn-") }
                return leftovers.isEmpty
            }
            #expect(leftovers.isEmpty, "threads of released queues survive: \(leftovers), seed \(seed)")
            // cancelPending may drop work: it must never run more than was enqueued.
            #expect(ran.value <= expected.value, "work ran that was never enqueued, seed \(seed)")
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func releasingWhileWorkIsPendingRunsAllOfIt(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let queues = StressConfiguration.iterations(40)
            let ran = TestCounter()
            withWatchdog(timeout: .seconds(120), "release with pending work stalled, seed \(seed)") {
                var random = SeededRandom(seed: seed)
                var total = 0
                for index in 0..<queues {
                    var queue: SerialQueue? = mode.queue(label: "pending-\(index)")
                    let works = 100 + Int(random.next() % 400)
                    total += works
                    do {
                        let producer = queue!
                        runThreads(3) { _ in
                            for _ in 0..<(works / 3) { producer.async { ran.increment() } }
                        }
                    }
                    total -= works - works / 3 * 3
                    queue = nil  // the last reference: returns once the worker has drained and exited
                    _ = queue
                    #expect(ran.value == total, "release returned before enqueued work ran, seed \(seed)")
                }
            }
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func suspendAndResumeUnderLoadKeepOrderAndLoseNothing(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perProducer = StressConfiguration.iterations(5_000)
            let queue = mode.queue(label: "stress-suspend")
            let log = Unguarded<[Int: [Int]]>([:])
            let producersDone = TestCounter()
            withWatchdog(timeout: .seconds(120), "suspend/resume under load stalled, seed \(seed)") {
                runThreads(Self.producers + 1) { thread in
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    if thread == Self.producers {
                        // The toggler: balanced suspend/resume pairs while producers run.
                        while producersDone.value < Self.producers {
                            queue.suspend()
                            if random.next() % 2 == 0 { queue.suspend(); queue.resume() }
                            queue.resume()
                        }
                        return
                    }
                    for step in 0..<perProducer {
                        let record: @Sendable () -> Void = { log.value[thread, default: []].append(step) }
                        if random.next() % 8 == 0 { queue.sync { record() } } else { queue.async(record) }
                    }
                    producersDone.increment()
                }
            }
            #expect(!queue.isSuspended, "suspend/resume pairs left the queue suspended, seed \(seed)")
            let final = queue.sync { log.value }
            for producer in 0..<Self.producers {
                #expect(final[producer] == Array(0..<perProducer), "producer \(producer) lost or reordered work, seed \(seed)")
            }
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func nestedSyncAcrossQueuesUnderLoadNeverDeadlocks(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let rounds = StressConfiguration.iterations(5_000)
            let a = mode.queue(label: "nest-a")
            let b = mode.queue(label: "nest-b")
            let both = Unguarded(0)
            withWatchdog(timeout: .seconds(120), "nested sync stalled, seed \(seed)") {
                runThreads(Self.producers) { thread in
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    for _ in 0..<rounds {
                        switch random.next() % 4 {
                        case 0: a.sync { b.sync { both.value += 1 } }  // always a before b: no cycle
                        case 1: a.async { b.sync { both.value += 1 } }
                        case 2: b.async { both.value += 1 }
                        default: b.sync { both.value += 1 }
                        }
                    }
                }
                a.sync {}
            }
            let total = b.sync { both.value }
            #expect(total == Self.producers * rounds, "nested work lost, seed \(seed)")
        }
    }

    @Test(.serialized, arguments: QueueMode.allCases) func delayedWorkRunsOrIsCancelledExactlyOnce(mode: QueueMode) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perThread = StressConfiguration.iterations(5_000)
            let queue = mode.queue(label: "stress-delayed")
            let ran = TestCounter()
            let cancelled = TestCounter()
            withWatchdog(timeout: .seconds(120), "delayed work stalled, seed \(seed)") {
                runThreads(4) { thread in
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    for _ in 0..<perThread {
                        let handle = queue.asyncAfter(delay: .microseconds(Int64(random.next() % 2_000))) { ran.increment() }
                        if random.next() % 2 == 0, handle.cancel() { cancelled.increment() }
                    }
                }
                // Past every deadline: everything not cancelled must have run exactly once.
                let done = TestSemaphore()
                queue.asyncAfter(delay: .milliseconds(5)) { done.signal() }
                #expect(done.wait(), "the final delayed work never ran, seed \(seed)")
            }
            #expect(ran.value + cancelled.value == 4 * perThread, "ran \(ran.value) + cancelled \(cancelled.value), seed \(seed)")
        }
    }
}

/// An actor whose jobs run on a shared SerialQueue.
private actor Tally {
    let queue: SerialQueue
    private var count = 0
    private var offQueue = 0

    init(queue: SerialQueue) { self.queue = queue }

    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }

    func add() {
        if !self.queue.isCurrent { self.offQueue += 1 }
        self.count += 1
    }

    var totals: (count: Int, offQueue: Int) { (self.count, self.offQueue) }
}

extension SerialQueueStressTests {
    @Test(.serialized, arguments: QueueMode.allCases) func actorsSharingAQueueUnderLoadRunEveryJobOnIt(mode: QueueMode) async {
        let seed = StressConfiguration.seed()
        let tasks = StressConfiguration.iterations(200)
        let queues = [mode.queue(label: "actors-1"), mode.queue(label: "actors-2")]
        let tallies = (0..<6).map { Tally(queue: queues[$0 % 2]) }
        // Plain async work and sync bodies interleave with the actors' jobs on the same queues.
        let noise = TestCounter()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<tasks {
                group.addTask {
                    var random = SeededRandom(seed: seed &+ UInt64(index))
                    for _ in 0..<10 {
                        await tallies[Int(random.next() % 6)].add()
                        if random.next() % 4 == 0 { queues[index % 2].async { noise.increment() } }
                    }
                }
            }
        }
        var total = 0
        for tally in tallies {
            let (count, offQueue) = await tally.totals
            #expect(offQueue == 0, "an actor job ran off its queue, seed \(seed)")
            total += count
        }
        #expect(total == tasks * 10, "actor jobs lost, seed \(seed)")
    }
}

@Suite("SerialQueue statistics stress")
struct SerialQueueStatisticsStressTests {
    @Test func figuresAreExactAfterARandomMixDrains() async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let perProducer = StressConfiguration.iterations(3_000)
            let queue = SerialQueue(label: "stress-figures")
            let ran = Atomic<Int>(0)
            let idleSyncs = Atomic<Int>(0)
            withWatchdog(timeout: .seconds(120), "statistics stress stalled, seed \(seed)") {
                runThreads(4) { producer in
                    var random = SeededRandom(seed: seed &+ UInt64(producer))
                    for _ in 0..<perProducer {
                        switch random.next() % 8 {
                        case 0: queue.sync { _ = idleSyncs.add(1, ordering: .relaxed) }
                        case 1: queue.suspend(); queue.async { ran.add(1, ordering: .relaxed) }; queue.resume()
                        default: queue.async { ran.add(1, ordering: .relaxed) }
                        }
                    }
                }
            }
            queue.sync {}
            let figures = queue.statistics
            #expect(figures.depth == 0, "depth \(figures.depth) after drain, seed \(seed): \(figures)")
            #expect(figures.submitted == figures.executed, "seed \(seed): \(figures)")
            // Every async item is an item; sync calls are items only when they waited.
            #expect(figures.submitted - figures.syncWaits == ran.load(ordering: .relaxed), "seed \(seed): \(figures)")
            #expect(figures.syncWaits <= idleSyncs.load(ordering: .relaxed) + 1, "seed \(seed): \(figures)")
            #expect(figures.highWaterDepth >= 1 && figures.highWaterDepth <= figures.submitted)
        }
    }
}
