import Glibc
import SerialRuntime
import Synchronization

/// Rows about a timer's tolerance: lateness when every peer is asked for its most precise
/// setting, and wake-ups when timers may be coalesced.
enum TimerPrecisionRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["timers_lateness_precise_p99"]) { runner in [Self.preciseRow(runner)] },
        RowPlan(names: ["timers_wakeups_coalesced"]) { runner in [Self.coalescedRow(runner)] },
    ]

    // MARK: timers_lateness_precise_p99

    static func preciseRow(_ runner: Runner) -> Row {
        var row = Row(name: "timers_lateness_precise_p99", unit: "µs", goals: [.ratio(.nio, atMost: 1.5)])
        let count = 100_000
        func add<T: TimerPeer>(_ peer: T.Type) {
            guard let result = TimerRows.available(T.self, in: &row, { TimerRows.fire(runner, T.self, count: count, precise: true) })
            else { return }
            row.values[T.column] = result.latenessP99
            row.counts[T.column] = count
        }
        add(SerialTimerPeer.self)
        add(DispatchTimerPeer.self)
        add(NIOTimerPeer.self)
        row.notes.append(
            "p99 of (callback start − deadline), the 100k timers of timers_lateness_p99, each peer at its most precise: "
                + "serial tolerance .zero; dispatch a .strict DispatchSourceTimer with leeway 0; nio scheduleTask (no tolerance)")
        return row
    }

    // MARK: timers_wakeups_coalesced

    static let coalescedCount = 100_000
    static let tolerance: Int64 = 10_000_000

    static func coalescedRow(_ runner: Runner) -> Row {
        var row = Row(name: "timers_wakeups_coalesced", unit: "wakeups/s", goals: [.serialAtMost(110)])
        if runner.includes(.serial) {
            row.values[.serial] = runner.median("timers_wakeups_coalesced serial, 10 ms") {
                Self.serial(tolerance: .nanoseconds(Self.tolerance))
            }
            let precise = runner.median("timers_wakeups_coalesced serial, tolerance zero") { Self.serial(tolerance: .zero) }
            let plain = runner.median("timers_wakeups_coalesced serial, default (one 1 ms tick)") { Self.serial(tolerance: nil) }
            row.counts[.serial] = Self.coalescedCount
            row.notes.append(
                "serial: the same timers with tolerance zero wake the worker \(formatNumber(precise))/s, with the default "
                    + "one tick (1 ms) \(formatNumber(plain))/s")
        }
        if runner.includes(.dispatch) {
            row.values[.dispatch] = runner.median("timers_wakeups_coalesced dispatch, leeway 10 ms") { Self.dispatch() }
            row.counts[.dispatch] = Self.coalescedCount
        }
        row.notes.append(
            "100k timers due 0.1–1.1 s after scheduling, 10 ms of tolerance; voluntary context switches per second of the "
                + "thread(s) that run them, from the last schedule call to the last callback. serial: the queue's worker; "
                + "dispatch (DispatchSourceTimer, leeway 10 ms): every thread but the main one")
        return row
    }

    /// Worker wake-ups per second while 100k timers with `tolerance` fire.
    static func serial(tolerance: Duration?) -> Double {
        let queue = SerialQueue(label: "cmp-coalesce")
        let service = TimerService(scheduler: queue)
        defer {
            service.stop()
            queue.shutdown(.drain)
        }
        let worker = Atomic<Int>(0)
        let learned = Latch()
        queue.async {
            worker.store(ContextSwitches.currentThreadID(), ordering: .relaxed)
            learned.countDown()
        }
        learned.wait(seconds: 10, "the coalescing queue reporting its thread")
        let tid = worker.load(ordering: .relaxed)
        return Self.wakeUpsPerSecond(read: { Self.voluntary([tid]) }) { delay, work in
            _ = try! service.schedule(after: .nanoseconds(delay), tolerance: tolerance, work)
        }
    }

    /// Wake-ups per second of every thread but the main one while 100k Dispatch timers with a
    /// 10 ms leeway fire.
    static func dispatch() -> Double {
        let peer = DispatchTimerPeer(label: "cmp-coalesce-dispatch")
        let main = ContextSwitches.currentThreadID()
        return Self.wakeUpsPerSecond(read: { Self.voluntary(ContextSwitches.threadIDs().filter { $0 != main }) }) {
            delay, work in
            peer.schedule(afterNanoseconds: delay, tolerance: Self.tolerance, work)
        }
    }

    /// Schedules the row's timers with `schedule`, then counts `read()`'s growth per second
    /// from the end of scheduling to the last callback.
    static func wakeUpsPerSecond(
        read: () -> Int, _ schedule: (Int64, @escaping @Sendable () -> Void) -> Void
    ) -> Double {
        let delays = Delays.uniform(Self.coalescedCount, from: Delays.second / 10, to: Delays.second + Delays.second / 10)
        let remaining = Atomic<Int>(Self.coalescedCount)
        let done = Latch()
        for delay in delays {
            schedule(delay) {
                if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.countDown() }
            }
        }
        let before = read()
        let started = Clock.now()
        done.wait(seconds: 60, "\(formatCount(Self.coalescedCount)) coalesced timers firing")
        let seconds = Double(Clock.now() - started) / 1e9
        return Double(read() - before) / seconds
    }

    /// Voluntary context switches (sleeps, each followed by a wake-up) of `threads` so far.
    static func voluntary(_ threads: [Int]) -> Int {
        threads.reduce(0) { sum, tid in
            guard let status = readTextFile("/proc/self/task/\(tid)/status") else { return sum }
            let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
            return sum + (line.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: " \t")) } ?? 0)
        }
    }
}
