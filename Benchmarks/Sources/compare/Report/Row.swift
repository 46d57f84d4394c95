/// A column of the comparison: one executor.
enum Column: String, CaseIterable, Sendable, CustomStringConvertible {
    case serial
    /// SerialQueues sharing one `WorkerPool` (core-count threads).
    case pooled
    case dispatch
    case nio
    /// The standard library's own way (default actors, `Task.sleep`, a task-group timeout).
    case stdlib

    var description: String { self.rawValue }

    /// The column's mark in the table's "ops per rep" cell.
    var initial: String { self == .stdlib ? "std" : String(self.rawValue.prefix(1)) }
}

/// A goal from the issue, checked against a row's median.
enum Goal {
    /// serial / peer must be at most `limit`.
    case ratio(Column, atMost: Double)
    /// The serial figure itself must be at most `limit`.
    case serialAtMost(Double)
    /// pooled / peer must be at most `limit`.
    case pooledRatio(Column, atMost: Double)
    /// The column's own figure must be at most `limit`.
    case columnAtMost(Column, Double)

    /// Whether `row` meets it; `nil` when the row lacks a figure it needs.
    func isMet(by row: Row) -> Bool? {
        switch self {
        case .ratio(let peer, let limit):
            return row.ratio(to: peer).map { $0 <= limit }
        case .serialAtMost(let limit):
            return row.values[.serial].map { $0 <= limit }
        case .pooledRatio(let peer, let limit):
            return row.ratio(of: .pooled, to: peer).map { $0 <= limit }
        case .columnAtMost(let column, let limit):
            return row.values[column].map { $0 <= limit }
        }
    }

    var description: String {
        switch self {
        case .ratio(let peer, let limit): return "≤\(formatNumber(limit)) of \(peer)"
        case .serialAtMost(let limit): return limit == 0 ? "= 0" : "≤\(formatNumber(limit))"
        case .pooledRatio(let peer, let limit): return "pooled ≤\(formatNumber(limit)) of \(peer)"
        case .columnAtMost(let column, let limit): return "\(column) ≤\(formatNumber(limit))"
        }
    }
}

/// One line of the comparison: the median of every column that has an equivalent.
struct Row {
    let name: String
    let unit: String
    var values: [Column: Double] = [:]
    /// How many operations each column's repetition used (when it matters to the reading).
    var counts: [Column: Int] = [:]
    var goals: [Goal] = []
    /// Why a column is missing or measured differently.
    var notes: [String] = []
    /// Per column, further figures per operation by name (the actor hop rows: context switches,
    /// allocations, and items through each queue's FIFO).
    var perCall: [Column: [String: Double]] = [:]
    /// The load averages when the row's measurement started and ended (rows measured together,
    /// such as a p50 and its p99, share them).
    var load: (start: LoadAverage?, end: LoadAverage?) = (nil, nil)

    init(name: String, unit: String, goals: [Goal] = []) {
        self.name = name
        self.unit = unit
        self.goals = goals
    }

    /// Sets `column`'s figure from `measure`, unless that peer was left out with `--peers`.
    mutating func measure(_ column: Column, _ runner: Runner, _ measure: () -> Double) {
        guard runner.includes(column) else { return }
        self.values[column] = measure()
    }

    /// serial / peer, when both were measured and the peer is not zero.
    func ratio(to peer: Column) -> Double? {
        self.ratio(of: .serial, to: peer)
    }

    /// column / peer, when both were measured and the peer is not zero.
    func ratio(of column: Column, to peer: Column) -> Double? {
        guard let value = self.values[column], let other = self.values[peer], other > 0 else { return nil }
        return value / other
    }
}

/// Three significant digits, no exponent for the magnitudes this table shows.
func formatNumber(_ value: Double) -> String {
    if value == 0 { return "0" }
    let magnitude = abs(value)
    let decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : 3
    var scaled = (value * pow10(decimals)).rounded() / pow10(decimals)
    if scaled == -0 { scaled = 0 }
    var text = String(scaled)
    if decimals == 0, text.hasSuffix(".0") { text.removeLast(2) }
    return text
}

private func pow10(_ exponent: Int) -> Double {
    var result = 1.0
    for _ in 0..<exponent { result *= 10 }
    return result
}

/// 1000 → "1k", 1_000_000 → "1M".
func formatCount(_ count: Int) -> String {
    if count >= 1_000_000, count % 1_000_000 == 0 { return "\(count / 1_000_000)M" }
    if count >= 1000, count % 1000 == 0 { return "\(count / 1000)k" }
    return String(count)
}
