import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// Seeded, bounded scenarios particular to `WorkerPool`: work on pool threads that posts to other
/// queues of the pool, waits for them in `sync`, and creates and drops queues (dedicated and
/// pooled) whose release waits on the pool thread. `STRESS_SEED` replays a seed.
@Suite("WorkerPool stress")
struct WorkerPoolStressTests {
    static let producers = 4  // twice the cores, outside the pool

    @Test func poolWorkThatPostsWaitsAndDropsQueuesLosesNothingAndNeverHangs() async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let rounds = StressConfiguration.iterations(1_500)
            let pool = WorkerPool(threads: 2, label: "stress-pool")
            let queues = (0..<4).map { SerialQueue(label: "sp\($0)", pool: pool) }
            let done = TestCounter()
            let expected = TestCounter()
            @Sendable func item(on index: Int, _ choice: UInt64, _ target: Int) {
                // Syncs go only to queues of a higher index: no cycle of waits.
                let later = index + 1 + target % max(1, queues.count - index - 1)
                switch choice % 16 {
                case 0..<6:
                    expected.increment()
                    queues[target].async { done.increment() }
                case 6..<11 where later < queues.count:
                    expected.increment()
                    queues[later].sync { _ = done.increment() }
                case 11 where later < queues.count:
                    // A dedicated queue released here: its release joins a worker that waits for the pool.
                    expected.increment()
                    let dedicated = SerialQueue(label: "sp-d")
                    dedicated.async { queues[later].sync { _ = done.increment() } }
                case 12:
                    // A pooled queue released here: its release waits for its work to drain on the pool.
                    expected.increment()
                    let pooled = SerialQueue(label: "sp-p", pool: pool)
                    pooled.async { done.increment() }
                default:
                    break
                }
            }
            withWatchdog(timeout: .seconds(120), "pool work that posts, waits and drops queues stalled, seed \(seed)") {
                runThreads(Self.producers) { thread in
                    var random = SeededRandom(seed: seed &+ UInt64(thread))
                    for _ in 0..<rounds {
                        let index = Int(random.next() % UInt64(queues.count))
                        let choice = random.next()
                        let target = Int(random.next() % UInt64(queues.count))
                        expected.increment()
                        queues[index].async {
                            item(on: index, choice, target)
                            done.increment()
                        }
                    }
                }
                for queue in queues { queue.sync {} }
                #expect(eventually { done.value == expected.value }, "work lost, seed \(seed)")
            }
            #expect(done.value == expected.value, "\(expected.value - done.value) items never ran, seed \(seed)")
        }
    }

    /// A rally between pooled queues (each hop posted by work on the other queue): hops go through
    /// the posting thread's `next` slot, or are published or stolen; none is lost or run twice at
    /// once, and each queue runs one hop at a time.
    @Test(arguments: [2, 3]) func aRallyOfHopsBetweenPooledQueuesRunsEveryHopOnceAndInOrder(width: Int) async {
        await stressBody {
            let seed = StressConfiguration.seed()
            let hops = StressConfiguration.iterations(200_000)
            let pool = WorkerPool(threads: width, label: "stress-rally")
            let queues = (0..<4).map { SerialQueue(label: "sr\($0)", pool: pool) }
            let inside = (0..<4).map { _ in TestCounter() }
            let overlaps = TestCounter()
            let hopsRun = TestCounter()
            let done = TestSemaphore()
            let rallies = 3
            @Sendable func hop(_ remaining: Int, on index: Int, _ state: UInt64) {
                hopsRun.increment()
                if inside[index].increment() != 1 { overlaps.increment() }
                defer { inside[index].increment(by: -1) }
                guard remaining > 0 else { return done.signal() }
                let next = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let target = Int((next >> 33) % UInt64(queues.count))
                queues[target].async { hop(remaining - 1, on: target, next) }
            }
            // Bounded by progress, not by speed (a loaded machine under a sanitizer runs the 600k
            // hops in 30 s to over 100 s): it fails if no hop at all runs for 30 s.
            withWatchdog(timeout: .seconds(900), "a rally of hops stalled, seed \(seed)") {
                for rally in 0..<rallies {
                    let start = Int(seed % 4) ^ rally % 4
                    queues[start].async { hop(hops, on: start, seed &+ UInt64(rally)) }
                }
                var finished = 0
                var seen = -1
                while finished < rallies {
                    if done.wait(timeout: .seconds(30)) { finished += 1; continue }
                    let now = hopsRun.value
                    guard now != seen else {
                        Issue.record("no hop ran for 30 s: \(rallies - finished) of \(rallies) rallies stalled after \(now) hops, seed \(seed)")
                        return
                    }
                    seen = now
                }
            }
            #expect(overlaps.value == 0, "\(overlaps.value) hops ran while another hop of their queue ran, seed \(seed)")
        }
    }
}
