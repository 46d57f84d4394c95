import Glibc
import SerialRuntime

/// `timers_memory_10m`: the memory 10M pending timers take, and what comes back after a mass
/// cancel. Each figure comes from a fresh child process (`compare --timer-memory MODE N`), where
/// no memory freed by earlier rows hides the cost.
enum TimerMemoryRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["timers_memory_10m"]) { _ in [Self.memoryRow(count: 10_000_000)] }
    ]

    /// The two ways the child process measures.
    enum Mode: String {
        /// Schedule N timers and drop every handle: the timers stay pending, held by the
        /// service alone, so the RSS added is the service's own cost. Then stop the service.
        case serviceOnly = "service"
        /// Schedule N timers keeping their handles (16 bytes each, in one array), cancel them
        /// all, drop the handles, stop the service: what stays is memory not given back.
        case cancelAll = "cancel"
    }

    static func memoryRow(count: Int) -> Row {
        var row = Row(name: "timers_memory_10m", unit: "MiB", goals: [.serialAtMost(640)])
        let service = Self.child(.serviceOnly, count)
        let cancel = Self.child(.cancelAll, count)
        if let pending = service.first { row.values[.serial] = pending }
        row.counts[.serial] = count
        let handles = Double(count * MemoryLayout<TimerHandle>.stride) / 1_048_576
        row.notes.append(
            "serial only: RSS added by \(formatCount(count)) pending timers (callbacks `{}`, which capture nothing, so no "
                + "closure storage), 10–60 s out, handles dropped at once: the service's own memory; a fresh process")
        if service.count > 1 {
            row.notes.append("after stop(): \(formatNumber(service[1])) MiB of it still resident")
        }
        if cancel.count > 2 {
            row.notes.append(
                "with the handles kept (\(formatNumber(handles)) MiB of them, in one array): \(formatNumber(cancel[0])) MiB; "
                    + "after cancelling all: \(formatNumber(cancel[1])) MiB; after dropping the handles and stopping the service: "
                    + "\(formatNumber(cancel[2])) MiB")
        }
        return row
    }

    /// The figures (MiB added since the child started) printed by one child process.
    static func child(_ mode: Mode, _ count: Int) -> [Double] {
        guard let output = runChildProcess(["--timer-memory", mode.rawValue, String(count)]) else { return [] }
        return output.split(separator: "\n").last.map { $0.split(separator: " ").compactMap { Double($0) } } ?? []
    }

    /// The child process's side: measures, logs, and prints the figures on one line.
    static func measure(_ mode: Mode, count: Int) -> [Double] {
        let peer = SerialTimerPeer(label: "cmp-tmem")
        let delays = Delays.uniform(count, from: 10 * Delays.second, to: 60 * Delays.second)
        _ = mallocTrim(0)  // memory freed before (the delays' scratch) must not be reused unseen
        let before = residentBytes()
        let added = { Double(residentBytes() - before) / 1_048_576 }
        var figures: [Double] = []
        switch mode {
        case .serviceOnly:
            for delay in delays { _ = peer.schedule(afterNanoseconds: delay) {} }
            figures.append(added())
            peer.service.stop()
            figures.append(added())
        case .cancelAll:
            var handles: [TimerHandle] = []
            handles.reserveCapacity(count)
            for delay in delays { handles.append(peer.schedule(afterNanoseconds: delay) {}) }
            figures.append(added())
            for handle in handles { peer.cancel(handle) }
            figures.append(added())
            handles = []
            peer.service.stop()
            figures.append(added())
        }
        withExtendedLifetime(delays) {}  // freed earlier, its 8 bytes per timer would read as given back
        peer.close()
        log("  \(mode.rawValue) ×\(formatCount(count)): \(figures.map(formatNumber).joined(separator: " → ")) MiB")
        return figures
    }
}

/// glibc's `malloc_trim`, which the Glibc module does not export (memory rows of every kind).
@_silgen_name("malloc_trim")
func mallocTrim(_ pad: Int) -> Int32
