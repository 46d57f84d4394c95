#if SERIAL_SIMULATION
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// Scenarios and helpers the simulator's own tests share (its determinism, replay, failure
/// reports and run boundaries).
enum SimulationTestScenarios {
    // MARK: Helpers

    /// Runs `scenario` `times` times with `seed`: the trace hashes and tokens seen.
    static func repeated(
        _ strategy: Simulation.Strategy = .random, seed: UInt64, times: Int = 5, maximumSteps: Int = 200_000,
        _ scenario: @escaping @Sendable () -> Void
    ) -> [SimulationResult] {
        (0..<times).map { _ in Simulation(strategy: strategy, maximumSteps: maximumSteps).run(seed: seed, scenario) }
    }

    static func describe(_ results: [SimulationResult]) -> String {
        results.map { "\(String($0.traceHash, radix: 16)) \($0.steps) \($0.failure?.replayLine ?? "passed")" }
            .joined(separator: "\n")
    }

    // MARK: Scenarios

    /// A pool with several attached queues, each with pending work, shut down as a whole: the
    /// pool walks its attached queues (a dictionary keyed by `ObjectIdentifier`).
    static let poolShutdownWithManyQueues: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 2, label: "atk-pool")
        let queues = (0..<4).map { SerialQueue(label: "atk-q\($0)", pool: pool) }
        let log = ScenarioLog()
        for (index, queue) in queues.enumerated() {
            for item in 0..<2 { queue.async { log.body(index * 10 + item) } }
        }
        pool.shutdown()
        Simulation.check(log.entries.count == 8, "drained \(log.entries)")
    }

    /// Delayed work (some cancelled) and a TimerService on a dedicated queue.
    static let timersAndAsyncAfter: @Sendable () -> Void = {
        let queue = SerialQueue(label: "atk-timers")
        let log = ScenarioLog()
        let a = queue.asyncAfter(delay: .milliseconds(5)) { log.body(1) }
        let b = queue.asyncAfter(delay: .milliseconds(3)) { log.body(2) }
        _ = queue.asyncAfter(delay: .milliseconds(1)) { log.body(3) }
        _ = b.cancel()
        let timers = TimerService(scheduler: queue)
        let done = Mailbox()
        _ = try? timers.schedule(after: .milliseconds(7)) { log.body(4) }
        _ = try? timers.schedule(after: .milliseconds(9)) { log.body(5); done.post() }
        done.take()
        _ = timers.stop()
        queue.sync {}
        Simulation.check(a.status != .cancelled, "a cancelled")
        Simulation.check(log.entries == [3, 1, 4, 5], "timers ran \(log.entries)")
    }

    /// Nested sync across six queues, fed from three producer queues.
    static let nestedSyncAcrossQueues: @Sendable () -> Void = {
        let chain = (0..<6).map { SerialQueue(label: "atk-chain\($0)") }
        let producers = (0..<3).map { SerialQueue(label: "atk-prod\($0)") }
        let log = ScenarioLog()
        for (index, producer) in producers.enumerated() {
            producer.async {
                chain[index].sync { chain[index + 2].sync { chain[5].sync { log.body(index) } } }
            }
        }
        for producer in producers { producer.sync {} }
        Simulation.check(log.entries.sorted() == [0, 1, 2], "ran \(log.entries)")
    }

    /// Work on a pooled queue creates and releases a dedicated queue (the release joins its
    /// thread on a pool thread: the blocking wrapper).
    static let blockingWrapperOnPool: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 2, label: "atk-bpool")
        let pooled = SerialQueue(label: "atk-pooled", pool: pool)
        let other = SerialQueue(label: "atk-pooled2", pool: pool)
        let log = ScenarioLog()
        pooled.async {
            let dedicated = SerialQueue(label: "atk-inner")
            dedicated.async { log.body(1) }
            _ = dedicated.shutdown()
        }
        other.async { log.body(2) }
        pooled.sync {}
        other.sync {}
        Simulation.check(log.entries.sorted() == [1, 2], "ran \(log.entries)")
    }

    /// A queue shut down while two producers keep submitting (tryAsync refused after shutdown).
    static let shutdownRacingSubmissions: @Sendable () -> Void = {
        let target = SerialQueue(label: "atk-target")
        let producers = (0..<2).map { SerialQueue(label: "atk-sub\($0)") }
        let ran = ScenarioLog()
        for (index, producer) in producers.enumerated() {
            producer.async {
                for item in 0..<3 { try? target.tryAsync { ran.body(index * 10 + item) } }
            }
        }
        _ = target.shutdown()
        for producer in producers { producer.sync {} }
        Simulation.check(ran.mostInBody <= 1, "two bodies at once")
    }

    /// Many threads: twelve dedicated queues, each doing a sync into its neighbour.
    static let manyThreads: @Sendable () -> Void = {
        let queues = (0..<12).map { SerialQueue(label: "atk-many\($0)") }
        let log = ScenarioLog()
        for index in 0..<12 where index % 2 == 0 {
            queues[index].async { queues[index + 1].sync { log.body(index) } }
        }
        for queue in queues { queue.sync {} }
        Simulation.check(log.entries.count == 6, "ran \(log.entries)")
    }

    /// A wrong expectation on pooled queues (fails under some interleavings only).
    static let pooledCrossOrder: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 2, label: "atk-xpool")
        let target = SerialQueue(label: "atk-xtarget", pool: pool)
        let producer = SerialQueue(label: "atk-xproducer", pool: pool)
        let feeder = SerialQueue(label: "atk-xfeeder", pool: pool)
        let log = ScenarioLog()
        producer.async { target.async { log.body(1) } }
        feeder.async { target.async { log.body(2) } }
        producer.sync {}
        feeder.sync {}
        target.sync {}
        Simulation.check(log.entries == [2, 1], "order: \(log.entries)")
    }

    /// A pooled queue shut down while producers on the same pool submit, then the pool released.
    static let pooledShutdownRacingSubmissions: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 2, label: "atk-rpool")
        let target = SerialQueue(label: "atk-rtarget", pool: pool)
        let producer = SerialQueue(label: "atk-rprod", pool: pool)
        let ran = ScenarioLog()
        producer.async { for item in 0..<3 { try? target.tryAsync { ran.body(item) } } }
        _ = target.shutdown(.cancelPending)
        producer.sync {}
        Simulation.check(ran.entries == ran.entries.sorted(), "out of order: \(ran.entries)")
    }

    /// Minimal: two pooled queues, no work, pool shutdown. Same seed, different traces.
    static let twoQueuesPoolShutdown: @Sendable () -> Void = {
        let pool = WorkerPool(threads: 1, label: "atk-min")
        let a = SerialQueue(label: "atk-min-a", pool: pool)
        let b = SerialQueue(label: "atk-min-b", pool: pool)
        pool.shutdown()
        _ = (a, b)
    }
}

final class SendableMutex: @unchecked Sendable {
    let mutex = PthreadMutex()
    func lock() { self.mutex.lock() }
    func unlock() { self.mutex.unlock() }
    func withLock<T>(_ body: () -> T) -> T { self.mutex.withLock(body) }
}

@inline(never)
func recurseUntilTheStackOverflows(_ depth: Int) -> Int {
    var frame = [UInt8](repeating: UInt8(truncatingIfNeeded: depth), count: 64)
    return withUnsafeMutableBytes(of: &frame) { _ in recurseUntilTheStackOverflows(depth + 1) } + frame.count
}

final class EscapeBox: @unchecked Sendable {
    var queue: SerialQueue?
    static let leaked = EscapeBox()
}

actor QueueActor {
    let queue: SerialQueue
    init(queue: SerialQueue) { self.queue = queue }
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }
    var pokes = 0
    func poke() { self.pokes += 1 }
}
#endif
