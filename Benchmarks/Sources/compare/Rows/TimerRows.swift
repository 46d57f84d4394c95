import Glibc
import Synchronization

/// Rows about timers: schedule and cancel, cost with many pending, firing, lateness, idle wake-ups.
enum TimerRows {
    /// Rows that run after the queue rows. `timers_schedule_cancel_1m` is in `lastPlans`: the
    /// Dispatch column leaves its cancelled items in libdispatch's timer list until they fall due
    /// (10–60 s later), and they must not fire during other rows.
    static let plans: [RowPlan] = [
        RowPlan(names: ["timers_fire_100k", "timers_lateness_p99"]) { runner in Self.fireRows(runner) },
        RowPlan(names: ["timers_pending_1m_vs_1k"]) { runner in [Self.pendingRow(runner)] },
    ]

    static let lastPlans: [RowPlan] = [
        RowPlan(names: ["timers_schedule_cancel_1m"]) { runner in [Self.scheduleCancelRow(runner)] }
    ]

    // MARK: timers_schedule_cancel_1m

    /// The most seconds one repetition of a schedule-and-cancel run may take: a peer that would
    /// need longer for 1M is measured at the largest count of its ladder that fits.
    static let repetitionBound = 5.0

    static func scheduleCancelRow(_ runner: Runner) -> Row {
        var row = Row(
            name: "timers_schedule_cancel_1m", unit: "ns/op",
            goals: [.ratio(.dispatch, atMost: 0.1), .ratio(.nio, atMost: 0.33)])
        row.notes.append("op = one schedule (10–60 s out) plus its cancel; all scheduled first, then all cancelled")
        let target = 1_000_000
        func add<T: TimerPeer>(_ peer: T.Type) {
            guard let (value, count) = available(T.self, in: &row, { Self.scheduleCancel(runner, T.self, upTo: target) })
            else { return }
            row.values[T.column] = value
            row.counts[T.column] = count
            if count < target {
                row.notes.append(
                    "\(T.column): measured at \(formatCount(count)), the largest count whose repetition fits in "
                        + "\(formatNumber(Self.repetitionBound)) s (1M would not); ns/op by count in its single trial "
                        + "runs: \(ladderNotes[T.column] ?? "")")
            }
        }
        add(SerialTimerPeer.self)
        add(NIOTimerPeer.self)
        add(DispatchTimerPeer.self)  // last: its cancelled items stay in libdispatch until due
        return row
    }

    /// ns/op of each count tried, per column, for the row's notes.
    nonisolated(unsafe) static var ladderNotes: [Column: String] = [:]

    /// ns per schedule+cancel pair, at the largest count up to `target` that fits the bound.
    static func scheduleCancel<T: TimerPeer>(_ runner: Runner, _: T.Type, upTo target: Int) -> (Double, Int) {
        let peer = T(label: "cmp-tsched")
        defer { peer.close() }
        var handles: [T.Handle] = []
        let trial = { (delays: [Int64]) -> UInt64 in
            handles.removeAll(keepingCapacity: true)
            handles.reserveCapacity(delays.count)
            let started = Clock.now()
            for delay in delays { handles.append(peer.schedule(afterNanoseconds: delay) {}) }
            for handle in handles { peer.cancel(handle) }
            return Clock.now() - started
        }
        // Grow the count while a repetition fits the bound. The next step's time is predicted
        // from the growth seen so far (between linear and quadratic: NIO's cancel scans its
        // heap), so a slow peer never runs a step far over the bound.
        var trials: [(count: Int, seconds: Double)] = []
        for candidate in [1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000] where candidate <= target {
            if let last = trials.last {
                var exponent = 2.0
                if trials.count >= 2, last.seconds >= 0.05 {
                    let before = trials[trials.count - 2]
                    exponent = log(last.seconds / before.seconds) / log(Double(last.count) / Double(before.count))
                    exponent = min(max(exponent, 1), 2)
                }
                let predicted = last.seconds * pow(Double(candidate) / Double(last.count), exponent)
                if predicted > Self.repetitionBound {
                    log("  \(T.column): \(formatCount(candidate)) would take ≈ \(formatNumber(predicted)) s; stopping")
                    break
                }
            }
            let seconds = Double(trial(Delays.uniform(candidate, from: 10 * Delays.second, to: 60 * Delays.second))) / 1e9
            if seconds > Self.repetitionBound { break }
            trials.append((candidate, seconds))
        }
        guard let count = trials.last?.count else {
            fatalError("compare: \(T.column) cannot schedule and cancel 1000 timers within \(Self.repetitionBound) s")
        }
        ladderNotes[T.column] = trials.map { "\(formatCount($0.count)): \(formatNumber($0.seconds * 1e9 / Double($0.count)))" }
            .joined(separator: ", ")
        let delays = Delays.uniform(count, from: 10 * Delays.second, to: 60 * Delays.second)
        let value = runner.median("timers_schedule_cancel \(T.column) ×\(formatCount(count))") {
            Double(trial(delays)) / Double(count)
        }
        handles.removeAll()
        return (value, count)
    }

    // MARK: timers_pending_1m_vs_1k

    static func pendingRow(_ runner: Runner) -> Row {
        var row = Row(name: "timers_pending_1m_vs_1k", unit: "ratio", goals: [.serialAtMost(1.5)])
        let probe = 100_000
        guard let (many, few) = available(SerialTimerPeer.self, in: &row, { Self.pendingCosts(runner, probe: probe) })
        else { return row }
        row.values[.serial] = many / few
        row.counts[.serial] = probe
        row.notes.append(
            "serial only: schedule+cancel of \(formatCount(probe)) more timers (10–60 s out) costs "
                + "\(formatNumber(many)) ns/op with 1M pending, \(formatNumber(few)) ns/op with 1k pending "
                + "(two services alive together, repetitions alternating between them)")
        return row
    }

    /// Medians of ns per schedule+cancel pair of `probe` timers on a service with 1M timers
    /// pending and on one with 1k pending. Both services live through the whole measurement and
    /// the repetitions alternate, so neither side pays for the other's set-up or tear-down.
    static func pendingCosts(_ runner: Runner, probe: Int) -> (many: Double, few: Double) {
        let crowded = SerialTimerPeer(label: "cmp-tpend-1m")
        let quiet = SerialTimerPeer(label: "cmp-tpend-1k")
        defer {
            crowded.close()
            quiet.close()
        }
        let keptMany = Delays.uniform(1_000_000, from: 10 * Delays.second, to: 60 * Delays.second, seed: 7)
            .map { crowded.schedule(afterNanoseconds: $0) {} }
        let keptFew = Delays.uniform(1_000, from: 10 * Delays.second, to: 60 * Delays.second, seed: 7)
            .map { quiet.schedule(afterNanoseconds: $0) {} }
        let delays = Delays.uniform(probe, from: 10 * Delays.second, to: 60 * Delays.second)
        var handles: [TimerHandleType] = []
        handles.reserveCapacity(probe)
        let once = { (peer: SerialTimerPeer) -> Double in
            handles.removeAll(keepingCapacity: true)
            let started = Clock.now()
            for delay in delays { handles.append(peer.schedule(afterNanoseconds: delay) {}) }
            for handle in handles { peer.cancel(handle) }
            return Double(Clock.now() - started) / Double(probe)
        }
        _ = once(crowded)
        _ = once(quiet)
        var many: [Double] = []
        var few: [Double] = []
        for _ in 0..<runner.repetitions {
            many.append(once(crowded))
            few.append(once(quiet))
        }
        log("  with 1M pending: \(many.map(formatNumber).joined(separator: ", "))")
        log("  with 1k pending: \(few.map(formatNumber).joined(separator: ", "))")
        withExtendedLifetime((keptMany, keptFew)) {}
        return (Statistics.median(many), Statistics.median(few))
    }

    typealias TimerHandleType = SerialTimerPeer.Handle

    // MARK: timers_fire_100k, timers_lateness_p99

    static func fireRows(_ runner: Runner) -> [Row] {
        var fire = Row(name: "timers_fire_100k", unit: "CPU ns/timer")
        var lateness = Row(name: "timers_lateness_p99", unit: "µs")
        let count = 100_000
        func add<T: TimerPeer>(_ peer: T.Type) {
            guard let result = available(T.self, in: &fire, { Self.fire(runner, T.self, count: count) }) else {
                // A peer that cannot be measured says why on both rows; one left out says nothing.
                if T.unavailableReason != nil, Runner.selectedPeers.contains(T.column) { lateness.notes.append(fire.notes.last!) }
                return
            }
            fire.values[T.column] = result.cpuPerTimer
            lateness.values[T.column] = result.latenessP99
            fire.counts[T.column] = count
            lateness.counts[T.column] = count
        }
        add(SerialTimerPeer.self)
        add(DispatchTimerPeer.self)
        add(NIOTimerPeer.self)
        fire.notes.append(
            "100k timers due uniformly within 1 s, scheduled from one thread; process CPU time (scheduling "
                + "and firing) per timer")
        lateness.notes.append("p99 of (callback start − deadline) over the same 100k timers")
        return [fire, lateness]
    }

    /// CPU per timer and p99 lateness of `count` timers due within 1 s: with the peer's default
    /// setting, or its most precise one when `precise` (`TimerPeer.schedule(afterNanoseconds:tolerance:_:)`).
    static func fire<T: TimerPeer>(
        _ runner: Runner, _: T.Type, count: Int, precise: Bool = false
    ) -> (cpuPerTimer: Double, latenessP99: Double) {
        let peer = T(label: "cmp-tfire")
        defer { peer.close() }
        let once = { (count: Int, window: Int64) -> [Double] in
            let delays = Delays.uniform(count, from: 1_000_000, to: window)
            let run = FireRun(count: count)
            let cpu = Clock.processCPU()
            for (index, delay) in delays.enumerated() {
                let deadline = Clock.now() &+ UInt64(delay)
                if precise {
                    peer.schedule(afterNanoseconds: delay, tolerance: nil) { run.fired(index, deadline: deadline) }
                } else {
                    _ = peer.schedule(afterNanoseconds: delay) { run.fired(index, deadline: deadline) }
                }
            }
            run.done.wait(seconds: 60, "\(T.column) firing \(count) timers")
            let cpuPerTimer = Double(Clock.processCPU() - cpu) / Double(count)
            if run.early.load(ordering: .relaxed) > 0 {
                log("  \(T.column): \(run.early.load(ordering: .relaxed)) timers fired before their deadline")
            }
            return [cpuPerTimer, run.samples.percentiles([0.99])[0] / 1000]
        }
        let result = runner.medians(
            "timers_fire\(precise ? " precise" : "") \(T.column) ×\(formatCount(count)) (CPU ns/timer, p99 lateness µs)",
            warmUp: { _ = once(count / 100, Delays.second / 100) }
        ) { once(count, Delays.second) }
        return (result[0], result[1])
    }

    final class FireRun: Sendable {
        let samples: Samples
        let remaining: Atomic<Int>
        let early = Atomic<Int>(0)
        let done = Latch()

        init(count: Int) {
            self.samples = Samples(count: count)
            self.remaining = Atomic(count)
        }

        @inline(__always)
        func fired(_ index: Int, deadline: UInt64) {
            let now = Clock.now()
            if now < deadline { self.early.add(1, ordering: .relaxed) }
            self.samples.record(now > deadline ? now - deadline : 0, at: index)
            if self.remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { self.done.countDown() }
        }
    }

    // MARK: idle_wakeups

    static func idleWakeups(_ runner: Runner) -> Row {
        var row = Row(name: "idle_wakeups", unit: "wakeups/s", goals: [.serialAtMost(0)])
        let timers = 10_000
        func add<T: TimerPeer>(_ peer: T.Type, wholeProcess: Bool) {
            guard let value = available(T.self, in: &row, {
                Self.idle(runner, T.self, timers: timers, wholeProcess: wholeProcess)
            }) else { return }
            row.values[T.column] = value
            row.counts[T.column] = timers
        }
        add(SerialTimerPeer.self, wholeProcess: false)
        add(NIOTimerPeer.self, wholeProcess: false)
        add(DispatchTimerPeer.self, wholeProcess: true)
        row.notes.append(
            "context switches over 2 s with 10k timers 5–10 min out; serial and nio: the worker / loop thread "
                + "(its TID read on it); dispatch: every thread but the main one (it has no fixed worker; this row "
                + "runs first, before other rows leave threads behind)")
        return row
    }

    /// Wake-ups per second of the peer's thread(s) over 2 s of idle with `timers` far timers pending.
    static func idle<T: TimerPeer>(_ runner: Runner, _: T.Type, timers: Int, wholeProcess: Bool) -> Double {
        let mainThread = ContextSwitches.currentThreadID()
        return runner.median("idle_wakeups \(T.column)") {
            let peer = T(label: "cmp-idle")
            defer { peer.close() }
            let learned = Latch()
            let worker = Samples(count: 1)
            peer.execute {
                worker.record(UInt64(ContextSwitches.currentThreadID()), at: 0)
                learned.countDown()
            }
            learned.wait(seconds: 10, "\(T.column) reporting its thread")
            let tid = Int(worker.pointer[0])
            let delays = Delays.uniform(timers, from: 300 * Delays.second, to: 600 * Delays.second)
            let handles = delays.map { peer.schedule(afterNanoseconds: $0) {} }
            Clock.sleep(milliseconds: 200)  // let whatever the scheduling started settle
            let read = { () -> [Int: Int] in
                wholeProcess ? ContextSwitches.snapshot(excluding: mainThread) : [tid: ContextSwitches.of(thread: tid) ?? 0]
            }
            let before = read()
            Clock.sleep(milliseconds: 2000)
            let after = read()
            for handle in handles { peer.cancel(handle) }
            return Double(ContextSwitches.growth(from: before, to: after)) / 2
        }
    }

    /// Runs `measure` when `T` can be measured in this build; otherwise notes why on `row`.
    static func available<T: TimerPeer, R>(_: T.Type, in row: inout Row, _ measure: () -> R) -> R? {
        guard Runner.selectedPeers.contains(T.column) else { return nil }
        if let reason = T.unavailableReason {
            row.notes.append("\(T.column): \(reason)")
            log("  \(T.column): \(reason)")
            return nil
        }
        return measure()
    }
}
