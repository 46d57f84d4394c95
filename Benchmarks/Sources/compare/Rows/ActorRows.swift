import Glibc
import NIOCore
import NIOPosix
import SerialRuntime

/// `task_spawn_1m`: spawning and awaiting child tasks that prefer a `WorkerPool` (`pooled`)
/// against the default executor (`stdlib`). The actor hop rows are in `ActorHopRows`.
enum ActorRows {
    static let plans: [RowPlan] = [
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

    /// Runs `body` in a task and waits on this (non-cooperative) thread; returns elapsed ns.
    private static func blockingRun(_ body: @escaping @Sendable () async -> Void) -> Double {
        let done = Latch()
        let start = Clock.now()
        Task.detached {
            await body()
            done.countDown()
        }
        done.wait(seconds: 300, "task_spawn_1m")
        return Double(Clock.now() - start)
    }
}
