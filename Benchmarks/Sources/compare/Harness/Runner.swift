import Glibc

/// Runs measurements: repetitions, medians, progress on stderr (stdout is the table or the JSON).
struct Runner {
    let repetitions: Int

    /// The peers chosen with `--peers` (all by default). Set once, before any row runs.
    nonisolated(unsafe) static var selectedPeers = Set(Column.allCases)

    func includes(_ column: Column) -> Bool { Self.selectedPeers.contains(column) }

    /// The median of `repetitions` runs of `once` (after one untimed warm-up when `warmUp` is given).
    func median(_ what: String, warmUp: (() -> Void)? = nil, _ once: () -> Double) -> Double {
        warmUp?()
        var values: [Double] = []
        for _ in 0..<self.repetitions { values.append(once()) }
        let median = Statistics.median(values)
        log("  \(what): median \(formatNumber(median)) of [\(values.map(formatNumber).joined(separator: ", "))]")
        return median
    }

    /// Like `median`, for a measurement that yields several figures per run (e.g. p50 and p99):
    /// the median of each figure.
    func medians(_ what: String, warmUp: (() -> Void)? = nil, _ once: () -> [Double]) -> [Double] {
        warmUp?()
        var runs: [[Double]] = []
        for _ in 0..<self.repetitions { runs.append(once()) }
        let medians = runs[0].indices.map { index in Statistics.median(runs.map { $0[index] }) }
        log("  \(what): medians \(medians.map(formatNumber).joined(separator: ", "))")
        return medians
    }
}

/// Context switches per operation over `body` (all threads), for the progress log: they
/// explain most differences between executors on hand-off rows.
func withSwitchCount<T>(_ what: String, operations: Int, _ body: () -> T) -> T {
    let before = Clock.processContextSwitches()
    let result = body()
    let switches = Clock.processContextSwitches() - before
    log("    \(what): \(formatNumber(Double(switches) / Double(operations))) context switches per op")
    return result
}

/// Progress and diagnostics go to stderr so that stdout holds only the result.
func log(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}
