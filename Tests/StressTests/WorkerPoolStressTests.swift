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

    @Test func poolWorkThatPostsWaitsAndDropsQueuesLosesNothingAndNeverHangs() {
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
