#if SERIAL_LOCK_STATISTICS
import SerialCore
import SerialTestSupport
import Testing

/// What the pool's mutex costs per turn, in workloads shaped like `compare`'s pooled rows. Built
/// and run only by `scripts/pool-lock-statistics.sh` (an instrumented release build); it prints
/// one line per workload and checks that the counters saw the work.
@Suite("Pool lock statistics", .serialized)
struct PoolLockStatisticsTests {
    /// Prints acquisitions per turn, contention, mean hold time, and the ceiling on turns per
    /// second that a lock held that long per turn sets (however many cores).
    private func report(_ name: String, _ pool: WorkerPool, body: () async -> Void) async {
        pool._resetLockStatistics()
        await body()
        let figures = pool._lockStatistics
        let units = max(1, figures.turns + figures.jobs)
        let perUnit = Double(figures.acquisitions) / Double(units)
        let meanHold = Double(figures.heldNanoseconds) / Double(max(1, figures.acquisitions))
        let holdPerUnit = Double(figures.heldNanoseconds) / Double(units)
        let ceiling = holdPerUnit > 0 ? 1e9 / holdPerUnit : .infinity
        print(
            "pool-lock: \(name): turns \(figures.turns) jobs \(figures.jobs) acquisitions \(figures.acquisitions) "
                + "per-turn \(rounded(perUnit)) contended \(rounded(100 * Double(figures.contended) / Double(max(1, figures.acquisitions))))% "
                + "mean-hold-ns \(rounded(meanHold)) hold-per-turn-ns \(rounded(holdPerUnit)) "
                + "ceiling-turns-per-s \(ceiling.isFinite ? String(Int(ceiling)) : "none")")
        #expect(figures.turns + figures.jobs > 0, "the counters saw no work")
    }

    private func rounded(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }

    /// Two queues handing one item back and forth: every hop makes the other queue runnable
    /// from a pool thread.
    @Test func pingPong() async {
        let pool = WorkerPool(threads: 2, label: "lockstats-pingpong")
        defer { pool.shutdown() }
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        await report("ping-pong 100k hops", pool) {
            let done = TestSemaphore()
            let hops = TestCounter()
            @Sendable func hop(_ here: SerialQueue, _ there: SerialQueue) {
                if hops.increment() >= 100_000 { done.signal(); return }
                there.async { hop(there, here) }
            }
            a.async { hop(a, b) }
            #expect(done.wait(timeout: .seconds(120)), "the ping-pong did not finish")
        }
    }

    /// One producer outside the pool puts 10 items on each of 10,000 queues (`queues_10k`).
    @Test func manyQueuesFromOutside() async {
        let pool = WorkerPool(threads: 2, label: "lockstats-queues")
        defer { pool.shutdown() }
        let queues = (0..<10_000).map { SerialQueue(label: "q\($0)", pool: pool) }
        await report("10k queues x 10 items from outside", pool) {
            let done = TestSemaphore()
            let left = TestCounter()
            for _ in 0..<10 {
                for queue in queues { queue.async { if left.increment() == 100_000 { done.signal() } } }
            }
            #expect(done.wait(timeout: .seconds(120)), "the items did not all run")
        }
    }

    /// A queue on the pool fans out to 100 others: queues made runnable from a pool thread
    /// while its `next` slot is full.
    @Test func fanOutInsideThePool() async {
        let pool = WorkerPool(threads: 2, label: "lockstats-fanout")
        defer { pool.shutdown() }
        let source = SerialQueue(label: "source", pool: pool)
        let targets = (0..<100).map { SerialQueue(label: "t\($0)", pool: pool) }
        await report("fan-out 100k items from a pooled queue to 100 queues", pool) {
            let done = TestSemaphore()
            let left = TestCounter()
            for round in 0..<1_000 {
                source.async {
                    for target in targets {
                        target.async { if left.increment() == 100_000 { done.signal() } }
                    }
                    _ = round
                }
            }
            #expect(done.wait(timeout: .seconds(120)), "the items did not all run")
        }
    }

    /// Every pool thread busy, as a pool past two cores is at saturation: two pooled queues fan
    /// out at once, each to 100 queues of its own, so no thread is free while the work flows.
    @Test func fanOutFromEveryThread() async {
        let pool = WorkerPool(threads: 2, label: "lockstats-saturated")
        defer { pool.shutdown() }
        let sources = (0..<2).map { SerialQueue(label: "source\($0)", pool: pool) }
        let targets = (0..<2).map { side in (0..<100).map { SerialQueue(label: "t\(side)-\($0)", pool: pool) } }
        await report("fan-out 2 x 50k items, every thread busy", pool) {
            let done = TestSemaphore()
            let left = TestCounter()
            for round in 0..<500 {
                for side in 0..<2 {
                    sources[side].async {
                        for target in targets[side] {
                            target.async { if left.increment() == 100_000 { done.signal() } }
                        }
                        _ = round
                    }
                }
            }
            #expect(done.wait(timeout: .seconds(120)), "the items did not all run")
        }
    }

    /// 100,000 child tasks that prefer the pool (`task_spawn`).
    @Test func taskSpawn() async {
        let pool = WorkerPool(threads: 2, label: "lockstats-tasks")
        defer { pool.shutdown() }
        await report("100k child tasks preferring the pool", pool) {
            let sum = await withTaskExecutorPreference(pool) {
                await withTaskGroup(of: Int.self) { group in
                    for index in 0..<100_000 { group.addTask { index & 1 } }
                    return await group.reduce(0, +)
                }
            }
            #expect(sum == 50_000)
        }
    }
}
#endif
