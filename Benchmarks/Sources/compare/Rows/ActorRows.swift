import Glibc
import NIOCore
import NIOPosix
import SerialRuntime

/// `actor_pingpong`: round trips between two actors, each on its own executor — pooled
/// `SerialQueue`s (`pooled`), dedicated ones (`serial`), SwiftNIO event loops (`nio`), or two
/// default actors (`stdlib`, which the runtime switches between on one thread without enqueuing,
/// a path custom executors do not get). `task_spawn_1m`: spawning and awaiting child tasks that
/// prefer a `WorkerPool` (`pooled`) against the default executor (`stdlib`).
enum ActorRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["actor_pingpong"]) { runner in [Self.pingPongRow(runner, roundTrips: 200_000)] },
        RowPlan(names: ["task_spawn_1m"]) { runner in [Self.taskSpawnRow(runner, count: 1_000_000)] },
    ]

    static func taskSpawnRow(_ runner: Runner, count: Int) -> Row {
        var row = Row(name: "task_spawn_1m", unit: "ns/task", goals: [.pooledRatio(.stdlib, atMost: 1)])
        row.measure(.pooled, runner) {
            runner.median("task_spawn_1m pooled") { Self.spawn(count, preferring: PooledPeer.pool) }
        }
        row.measure(.stdlib, runner) {
            runner.median("task_spawn_1m stdlib") { Self.spawn(count, preferring: nil) }
        }
        row.counts = [.pooled: count, .stdlib: count]
        row.notes.append(
            "ns per child task spawned in a task group and awaited: pooled under withTaskExecutorPreference(WorkerPool), "
                + "stdlib on the default executor")
        return row
    }

    /// Spawns `count` child tasks (in batches of 10,000) and awaits them; returns ns per task.
    private static func spawn(_ count: Int, preferring pool: WorkerPool?) -> Double {
        Self.blockingRun {
            await withTaskExecutorPreference(pool) {
                var left = count
                while left > 0 {
                    let batch = min(left, 10_000)
                    await withTaskGroup(of: Int.self) { group in
                        for index in 0..<batch { group.addTask { index } }
                        var sum = 0
                        for await value in group { sum &+= value }
                        if sum == -1 { log("") }
                    }
                    left -= batch
                }
            }
        } / Double(count)
    }

    static func pingPongRow(_ runner: Runner, roundTrips: Int) -> Row {
        var row = Row(name: "actor_pingpong", unit: "ns/round trip", goals: [.pooledRatio(.nio, atMost: 1)])
        row.measure(.pooled, runner) {
            let a = SerialQueue(label: "cmp-actor-a", pool: PooledPeer.pool)
            let b = SerialQueue(label: "cmp-actor-b", pool: PooledPeer.pool)
            return runner.median("actor_pingpong pooled") { Self.measure(ExecutorPonger(b), on: a, roundTrips) }
        }
        row.measure(.serial, runner) {
            let a = SerialQueue(label: "cmp-actor-a")
            let b = SerialQueue(label: "cmp-actor-b")
            return runner.median("actor_pingpong serial") { Self.measure(ExecutorPonger(b), on: a, roundTrips) }
        }
        row.measure(.nio, runner) {
            // Two groups of one loop each: two threads for certain.
            let groups = [MultiThreadedEventLoopGroup(numberOfThreads: 1), MultiThreadedEventLoopGroup(numberOfThreads: 1)]
            defer { for group in groups { try? group.syncShutdownGracefully() } }
            let a = groups[0].next().executor
            let b = groups[1].next().executor
            return runner.median("actor_pingpong nio") { Self.measure(ExecutorPonger(b), on: a, roundTrips) }
        }
        row.measure(.stdlib, runner) {
            runner.median("actor_pingpong stdlib") { Self.measureDefault(roundTrips) }
        }
        for column in [Column.pooled, .serial, .nio, .stdlib] { row.counts[column] = roundTrips }
        row.notes.append(
            "ns per round trip A → B → A between two actors: pooled/serial on SerialQueues (pooled: one WorkerPool), "
                + "nio on two event loops (one group each), stdlib two default actors; one task drives A")
        return row
    }

    /// Runs `roundTrips` calls from an actor on `executor` to `ponger`; returns ns per round trip.
    private static func measure(_ ponger: ExecutorPonger, on executor: any SerialExecutor, _ roundTrips: Int) -> Double {
        let pinger = ExecutorPinger(executor)
        return Self.blockingRun { await pinger.run(ponger, roundTrips) } / Double(roundTrips)
    }

    private static func measureDefault(_ roundTrips: Int) -> Double {
        let pinger = DefaultPinger()
        let ponger = DefaultPonger()
        return Self.blockingRun { await pinger.run(ponger, roundTrips) } / Double(roundTrips)
    }

    /// Runs `body` in a task and waits on this (non-cooperative) thread; returns elapsed ns.
    private static func blockingRun(_ body: @escaping @Sendable () async -> Void) -> Double {
        let done = Latch()
        let start = Clock.now()
        Task.detached {
            await body()
            done.countDown()
        }
        done.wait(seconds: 300, "actor_pingpong")
        return Double(Clock.now() - start)
    }
}

actor ExecutorPinger {
    let executor: any SerialExecutor
    init(_ executor: any SerialExecutor) { self.executor = executor }
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.executor.asUnownedSerialExecutor() }

    func run(_ ponger: ExecutorPonger, _ roundTrips: Int) async {
        for _ in 0..<roundTrips { await ponger.pong() }
    }
}

actor ExecutorPonger {
    let executor: any SerialExecutor
    private var count = 0
    init(_ executor: any SerialExecutor) { self.executor = executor }
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.executor.asUnownedSerialExecutor() }

    func pong() { self.count &+= 1 }
}

actor DefaultPinger {
    func run(_ ponger: DefaultPonger, _ roundTrips: Int) async {
        for _ in 0..<roundTrips { await ponger.pong() }
    }
}

actor DefaultPonger {
    private var count = 0
    func pong() { self.count &+= 1 }
}
