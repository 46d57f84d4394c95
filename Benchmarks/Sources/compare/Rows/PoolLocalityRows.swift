import Glibc
import NIOCore
import NIOPosix
import SerialRuntime

/// What a pool's locality costs and saves: `conservation_delay_p99` (the wait of work that a busy
/// pool thread makes runnable while another thread is idle) and `actor_chain_8` (a call through
/// eight actors on eight executors and back).
enum PoolLocalityRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["conservation_delay_p99"]) { runner in [Self.conservationDelayRow(runner, samples: 1_000)] },
        RowPlan(names: ["actor_chain_8"]) { runner in [Self.chainRow(runner, calls: 20_000)] },
    ]

    // MARK: conservation_delay_p99

    /// µs from `B.execute` inside a long item on A until B's work starts, with the other threads
    /// idle (asleep) when it is posted: the pooled queue waits in its thread's `next` slot until
    /// a woken thread has watched it for the pool's patience; a dedicated queue or Dispatch wakes
    /// a thread at once. The item on A runs 200 µs, so B cannot run after it within the figure.
    static func conservationDelayRow(_ runner: Runner, samples: Int) -> Row {
        var row = Row(name: "conservation_delay_p99", unit: "µs")
        func add<P: Peer>(_: P.Type) {
            guard runner.includes(P.column) else { return }
            let medians = runner.medians("conservation_delay \(P.column) ×\(samples)") {
                Self.delays(P.self, samples: samples)
            }
            row.values[P.column] = medians[1]
            row.counts[P.column] = samples
            row.notes.append("\(P.column): p50 \(formatNumber(medians[0])) µs, max \(formatNumber(medians[2])) µs")
        }
        add(SerialPeer.self)
        add(PooledPeer.self)
        add(DispatchPeer.self)
        row.notes.append(
            "µs from B.async inside a 200 µs item on A until B's work starts, the other threads idle for 500 µs "
                + "before each sample (pooled: B waits in the busy thread's next slot for the pool's patience of "
                + "\(WorkerPool.nextPatience) plus a watcher's wake-up; serial: B's own worker wakes; dispatch: a "
                + "pool thread wakes); p99 of \(formatCount(samples)) samples, median of the repetitions")
        return row
    }

    /// One repetition: p50, p99 and maximum of `samples` delays, in µs.
    private static func delays<P: Peer>(_: P.Type, samples: Int) -> [Double] {
        let a = P(label: "cmp-delay-a")
        let b = P(label: "cmp-delay-b")
        defer {
            a.close()
            b.close()
        }
        let waits = Samples(count: samples)
        for index in 0..<samples {
            usleep(500)  // every other thread falls asleep (the pool's watch window is 20 µs)
            let done = Latch()
            a.execute {
                let posted = Clock.now()
                b.execute {
                    waits.record(Clock.now() - posted, at: index)
                    done.countDown()
                }
                while Clock.now() - posted < 200_000 {}  // a long item: B must start elsewhere
            }
            done.wait(seconds: 60, "conservation_delay \(P.column)")
            a.drain()
        }
        return waits.percentiles([0.5, 0.99, 1]).map { $0 / 1_000 }
    }

    // MARK: actor_chain_8

    /// ns per call through eight actors, each on its own executor, and back: the first actor
    /// loops, awaiting the second, each awaits the next, the eighth returns, and each touches its
    /// state on the way back (so every return needs its executor): 14 hops per call.
    static func chainRow(_ runner: Runner, calls: Int) -> Row {
        var row = Row(name: "actor_chain_8", unit: "ns/call")
        let links = 8
        func measure(_ column: Column, count: Int, _ loop: @escaping (Int) -> Double) {
            guard runner.includes(column) else { return }
            row.values[column] = runner.median(
                "actor_chain_8 \(column) ×\(formatCount(count))", warmUp: { _ = loop(count / 10) }
            ) { loop(count) }
            row.counts[column] = count
        }
        if runner.includes(.serial) {
            let queues = (0..<links).map { SerialQueue(label: "cmp-chain-\($0)") }
            let chain = ChainLink.chain(queues.map { $0.asUnownedSerialExecutor() })
            measure(.serial, count: calls) { Self.run(count: $0) { await chain.loop(calls: $0) } }
            withExtendedLifetime(queues) {}
        }
        if runner.includes(.pooled) {
            let queues = (0..<links).map { SerialQueue(label: "cmp-chain-\($0)", pool: PooledPeer.pool) }
            let chain = ChainLink.chain(queues.map { $0.asUnownedSerialExecutor() })
            measure(.pooled, count: calls) { Self.run(count: $0) { await chain.loop(calls: $0) } }
            withExtendedLifetime(queues) {}
        }
        if runner.includes(.stdlib) {
            var chain = DefaultChainLink(next: nil)
            for _ in 1..<links { chain = DefaultChainLink(next: chain) }
            let first = chain
            measure(.stdlib, count: calls) { Self.run(count: $0) { await first.loop(calls: $0) } }
        }
        if runner.includes(.nio) {
            let groups = (0..<links).map { _ in MultiThreadedEventLoopGroup(numberOfThreads: 1) }
            let chain = ChainLink.chain(groups.map { $0.next().executor.asUnownedSerialExecutor() })
            measure(.nio, count: calls / 4) { Self.run(count: $0) { await chain.loop(calls: $0) } }
            for group in groups { try? group.syncShutdownGracefully() }
        }
        row.notes.append(
            "ns per call A1 → A2 → … → A8 and back (14 hops), each actor on its own executor, each touching its state "
                + "after its await (serial: 8 dedicated SerialQueues; pooled: 8 SerialQueues on one WorkerPool; nio: 8 "
                + "event loops, one group each; stdlib: 8 default actors, which the runtime switches between inline)")
        return row
    }

    /// Runs `loop` (which returns ns per call) in a task, waiting on this (non-cooperative) thread.
    private static func run(count: Int, _ loop: @escaping @Sendable (Int) async -> Double) -> Double {
        let result = ResultBox<Double>()
        let done = Latch()
        Task.detached {
            result.value = await loop(count)
            done.countDown()
        }
        done.wait(seconds: 300, "actor_chain_8")
        return result.value!
    }
}

/// One actor of the chain, on the executor it was given (which its owner keeps alive).
actor ChainLink {
    private let executor: UnownedSerialExecutor
    private let next: ChainLink?
    private var passes = 0

    init(executor: UnownedSerialExecutor, next: ChainLink?) {
        self.executor = executor
        self.next = next
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { self.executor }

    /// The chain's first link.
    static func chain(_ executors: [UnownedSerialExecutor]) -> ChainLink {
        var link: ChainLink? = nil
        for executor in executors.reversed() { link = ChainLink(executor: executor, next: link) }
        return link!
    }

    func pass() async {
        if let next = self.next { await next.pass() }
        self.passes &+= 1  // needs this actor's isolation: the return hop cannot be left out
    }

    func loop(calls: Int) async -> Double {
        let start = Clock.now()
        for _ in 0..<calls { await self.pass() }
        return Double(Clock.now() - start) / Double(calls)
    }
}

/// `ChainLink` as a default actor (the runtime's generic executor).
actor DefaultChainLink {
    private let next: DefaultChainLink?
    private var passes = 0

    init(next: DefaultChainLink?) { self.next = next }

    func pass() async {
        if let next = self.next { await next.pass() }
        self.passes &+= 1
    }

    func loop(calls: Int) async -> Double {
        let start = Clock.now()
        for _ in 0..<calls { await self.pass() }
        return Double(Clock.now() - start) / Double(calls)
    }
}
