import Dispatch
import Glibc
import NIOCore
import NIOPosix
import SerialRuntime
import Synchronization

/// Rows about timers that protocols re-arm (idle timeouts) and repeat (heartbeats).
enum TimerRearmRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["timers_rearm_100k"]) { runner in [Self.rearmRow(runner)] },
        RowPlan(names: ["timers_repeating_drift"]) { runner in [Self.driftRow(runner)] },
    ]

    static let pending = 100_000
    static let rearms = 1_000_000

    // MARK: timers_rearm_100k

    static func rearmRow(_ runner: Runner) -> Row {
        var row = Row(
            name: "timers_rearm_100k", unit: "ns/op",
            goals: [.ratio(.dispatch, atMost: 0.1), .ratio(.nio, atMost: 0.2)])
        row.notes.append(
            "op = move one of 100k pending timers (10–60 s out) to a new deadline; 1M ops round-robin. "
                + "serial: TimerHandle.reschedule (in place); dispatch: DispatchSourceTimer.schedule; "
                + "nio: cancel + scheduleTask (no re-arm in place)")
        let delays = Delays.uniform(Self.pending, from: 10 * Delays.second, to: 60 * Delays.second, seed: 11)
        let moves = Delays.uniform(Self.rearms, from: 10 * Delays.second, to: 60 * Delays.second, seed: 12)
        var cpu: [Column: Double] = [:]
        func add(_ column: Column, _ measure: () -> [Double]) {
            guard runner.includes(column) else { return }
            let figures = measure()
            row.values[column] = figures[0]
            cpu[column] = figures[1]
        }
        add(.serial) { Self.serial(runner, delays, moves) }
        add(.dispatch) { Self.dispatch(runner, delays, moves) }
        add(.nio) { Self.nio(runner, delays, moves) }
        row.counts = [.serial: Self.rearms, .dispatch: Self.rearms, .nio: Self.rearms]
        if !cpu.isEmpty {
            row.notes.append(
                "process CPU ns per re-arm, every thread, counted until 20 ms after the last call (Dispatch and NIO finish "
                    + "a re-arm on another thread): "
                    + cpu.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \(formatNumber($0.value))" }
                    .joined(separator: ", "))
        }
        return row
    }

    static func serial(_ runner: Runner, _ delays: [Int64], _ moves: [Int64]) -> [Double] {
        let queue = SerialQueue(label: "cmp-rearm")
        let service = TimerService(scheduler: queue)
        defer {
            service.stop()
            queue.shutdown(.drain)
        }
        let handles = delays.map { try! service.schedule(after: .nanoseconds($0)) {} }
        return runner.medians("timers_rearm serial (wall ns, CPU ns)") {
            Self.timed(moves.count) {
                for (index, delay) in moves.enumerated() {
                    _ = handles[index % handles.count].reschedule(after: .nanoseconds(delay))
                }
            }
        }
    }

    static func dispatch(_ runner: Runner, _ delays: [Int64], _ moves: [Int64]) -> [Double] {
        let queue = DispatchQueue(label: "cmp-rearm-dispatch")
        let sources = delays.map { delay -> DispatchSourceTimer in
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.setEventHandler {}
            source.schedule(deadline: .now() + .nanoseconds(Int(delay)))
            source.activate()
            return source
        }
        defer { for source in sources { source.cancel() } }
        return runner.medians("timers_rearm dispatch (wall ns, CPU ns)") {
            Self.timed(moves.count) {
                for (index, delay) in moves.enumerated() {
                    sources[index % sources.count].schedule(deadline: .now() + .nanoseconds(Int(delay)))
                }
            }
        }
    }

    static func nio(_ runner: Runner, _ delays: [Int64], _ moves: [Int64]) -> [Double] {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try! group.syncShutdownGracefully() }
        let loop = group.next()
        var tasks = delays.map { loop.scheduleTask(in: .nanoseconds($0)) {} }
        return runner.medians("timers_rearm nio (wall ns, CPU ns)") {
            Self.timed(moves.count) {
                for (index, delay) in moves.enumerated() {
                    let slot = index % tasks.count
                    tasks[slot].cancel()
                    tasks[slot] = loop.scheduleTask(in: .nanoseconds(delay)) {}
                }
            }
        }
    }

    /// Wall-clock ns per op of `body`, and process CPU ns per op counted until 20 ms after it
    /// returned, so work a peer finishes on another thread is in the second figure.
    static func timed(_ operations: Int, _ body: () -> Void) -> [Double] {
        let cpu = Clock.processCPU()
        let started = Clock.now()
        body()
        let wall = Clock.now() - started
        var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        nanosleep(&pause, nil)
        return [Double(wall) / Double(operations), Double(Clock.processCPU() - cpu) / Double(operations)]
    }

    // MARK: timers_repeating_drift

    /// A repeating timer of 1 ms on a real queue for 10k periods: how late the last period
    /// fires relative to `first + 10k × period` (drift would grow with the count; lateness
    /// alone stays within a tick plus wake-up latency).
    static func driftRow(_ runner: Runner) -> Row {
        var row = Row(name: "timers_repeating_drift", unit: "µs")
        guard runner.includes(.serial) else { return row }
        let periods = 10_000
        row.values[.serial] = runner.median("timers_repeating_drift serial") {
            let queue = SerialQueue(label: "cmp-drift")
            let service = TimerService(scheduler: queue, tick: .microseconds(100))
            defer {
                service.stop()
                queue.shutdown(.drain)
            }
            let first = MonotonicInstant.now() + .milliseconds(1)
            let fired = Atomic<Int>(0)
            let lastLateness = Atomic<Int64>(0)
            let done = Latch()
            let handle = try! service.schedule(every: .milliseconds(1), startingAt: first) {
                let count = fired.wrappingAdd(1, ordering: .relaxed).newValue
                guard count == periods else { return }
                // Lateness against the grid: the period this firing belongs to is the last one due.
                let sinceFirst = (MonotonicInstant.now() - first).saturatingNanoseconds
                lastLateness.store(sinceFirst % 1_000_000, ordering: .relaxed)
                done.countDown()
            }
            done.wait(seconds: 60, "10k periods of a repeating timer")
            handle.cancel()
            return Double(lastLateness.load(ordering: .relaxed)) / 1_000
        }
        row.counts[.serial] = periods
        row.notes.append(
            "serial only: lateness of period 10,000 of a 1 ms repeating timer (tick 100 µs) on a real queue; "
                + "periods computed from the first deadline, missed ones skipped (so a late period cannot shift later ones)")
        return row
    }
}
