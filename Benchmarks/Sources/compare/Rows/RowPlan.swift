/// What to measure, in the order it runs, and with how many operations per repetition.
///
/// The idle row runs first, while the process has no leftover threads or pending timers from
/// other rows that could wake up during its quiet window.
struct RowPlan: Sendable {
    /// The rows this plan produces.
    let names: [String]
    let run: @Sendable (Runner) -> [Row]

    /// The rows in the order they are printed.
    static let order = [
        "async_1p", "async_2p", "sync_uncontended", "sync_contended", "pingpong_p50", "pingpong_p99",
        "pingpong_loaded_p50", "pingpong_loaded_p99", "queues_10k", "starfish",
        "timers_schedule_cancel_1m", "timers_pending_1m_vs_1k", "timers_fire_100k", "timers_lateness_p99",
        "timers_lateness_precise_p99", "timers_wakeups_coalesced",
        "timers_rearm_100k", "timers_repeating_drift", "timers_memory_10m",
        "idle_wakeups", "countdown_tick_100k", "sleep_cancel_1m", "deadline_100k",
        "actor_call_same_executor", "actor_roundtrip", "actor_chain_8", "conservation_delay_p99", "task_spawn_1m",
    ]

    static let all: [RowPlan] = [
        RowPlan(names: ["idle_wakeups"]) { runner in [TimerRows.idleWakeups(runner)] },
        RowPlan(names: ["async_1p"]) { runner in
            var row = Row(name: "async_1p", unit: "ns/task", goals: [.ratio(.dispatch, atMost: 0.33), .ratio(.nio, atMost: 1)])
            let count = 1_000_000
            row.measure(.serial, runner) { QueueRows.async1p(runner, SerialPeer.self, count: count) }
            row.measure(.pooled, runner) { QueueRows.async1p(runner, PooledPeer.self, count: count) }
            row.measure(.dispatch, runner) { QueueRows.async1p(runner, DispatchPeer.self, count: count) }
            row.measure(.nio, runner) { QueueRows.async1p(runner, NIOPeer.self, count: count) }
            row.counts = [.serial: count, .pooled: count, .dispatch: count, .nio: count]
            return [row]
        },
        RowPlan(names: ["async_2p"]) { runner in
            var row = Row(name: "async_2p", unit: "ns/task")
            let count = 1_000_000
            row.measure(.serial, runner) { QueueRows.async2p(runner, SerialPeer.self, count: count) }
            row.measure(.pooled, runner) { QueueRows.async2p(runner, PooledPeer.self, count: count) }
            row.measure(.dispatch, runner) { QueueRows.async2p(runner, DispatchPeer.self, count: count) }
            row.measure(.nio, runner) { QueueRows.async2p(runner, NIOPeer.self, count: count) }
            row.counts = [.serial: count, .pooled: count, .dispatch: count, .nio: count]
            return [row]
        },
        RowPlan(names: ["sync_uncontended"]) { runner in
            var row = Row(name: "sync_uncontended", unit: "ns/call", goals: [.ratio(.dispatch, atMost: 0.5)])
            let count = 1_000_000
            let nioCount = 50_000  // each call is a round trip to the loop thread and back
            row.measure(.serial, runner) { QueueRows.syncUncontended(runner, SerialPeer.self, count: count) }
            row.measure(.pooled, runner) { QueueRows.syncUncontended(runner, PooledPeer.self, count: count) }
            row.measure(.dispatch, runner) { QueueRows.syncUncontended(runner, DispatchPeer.self, count: count) }
            row.measure(.nio, runner) { QueueRows.syncUncontended(runner, NIOPeer.self, count: nioCount) }
            row.counts = [.serial: count, .pooled: count, .dispatch: count, .nio: nioCount]
            row.notes.append("nio: submit {}.wait() from outside the loop (a promise and two thread hand-offs per call)")
            return [row]
        },
        RowPlan(names: ["sync_contended"]) { runner in
            var row = Row(name: "sync_contended", unit: "ns/call")
            let (sync, async) = (200_000, 400_000)
            let (nioSync, nioAsync) = (20_000, 40_000)
            row.measure(.serial, runner) { QueueRows.syncContended(runner, SerialPeer.self, syncCount: sync, asyncCount: async) }
            row.measure(.pooled, runner) { QueueRows.syncContended(runner, PooledPeer.self, syncCount: sync, asyncCount: async) }
            row.measure(.dispatch, runner) { QueueRows.syncContended(runner, DispatchPeer.self, syncCount: sync, asyncCount: async) }
            row.measure(.nio, runner) { QueueRows.syncContended(runner, NIOPeer.self, syncCount: nioSync, asyncCount: nioAsync) }
            row.counts = [.serial: 2 * sync, .pooled: 2 * sync, .dispatch: 2 * sync, .nio: 2 * nioSync]
            row.notes.append(
                "2 threads × \(formatCount(sync)) sync calls (nio \(formatCount(nioSync))) while a third enqueues "
                    + "\(formatCount(async)) async (nio \(formatCount(nioAsync))); timed until both sync threads finish")
            return [row]
        },
        RowPlan(names: ["pingpong_p50", "pingpong_p99"]) { runner in
            var p50 = Row(name: "pingpong_p50", unit: "ns/hop", goals: [.ratio(.dispatch, atMost: 1)])
            var p99 = Row(name: "pingpong_p99", unit: "ns/hop")
            let hops = 20_000
            func add<P: Peer>(_: P.Type) {
                guard runner.includes(P.column) else { return }
                let result = PingPongRows.measure(runner, P.self, hops: hops)
                let column = P.column
                p50.values[column] = result.p50
                p99.values[column] = result.p99
                p50.counts[column] = hops
                p99.counts[column] = hops
            }
            add(SerialPeer.self)
            add(PooledPeer.self)
            add(DispatchPeer.self)
            add(NIOPeer.self)
            return [p50, p99]
        },
    ] + PoolRows.plans + TimerRows.plans + TimerPrecisionRows.plans + TimerRearmRows.plans + TimerMemoryRows.plans
        + CountdownRows.plans + AsyncTimeRows.plans + ActorHopRows.plans + PoolLocalityRows.plans + ActorRows.plans + TimerRows.lastPlans
}
