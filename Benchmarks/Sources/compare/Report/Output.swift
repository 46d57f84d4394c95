/// The run's context, printed with the table.
struct Machine {
    var cores: Int
    var cpu: String
    var repetitions: Int
}

enum Output {
    /// Exactly one JSON object: `{"rows":[{"name":…,"unit":…,"serial":x,"pooled":w,"dispatch":y,"nio":z},…]}`,
    /// a column absent when that peer has no equivalent (or could not be measured). Each row
    /// also carries `counts` (operations per repetition per column), `per_call` (further figures
    /// per operation by column, e.g. `{"serial":{"allocations":0,"switches":0,…}}`) and `notes`
    /// when it has any,
    /// and `load`: the machine's load averages (1, 5, 15 minutes) when its measurement started and
    /// ended, `{"start":[…],"end":[…]}`; the object carries `cores` and `repetitions`.
    static func json(_ rows: [Row], machine: Machine) -> String {
        var parts: [String] = []
        for row in rows {
            var fields = ["\"name\":\(quoted(row.name))", "\"unit\":\(quoted(row.unit))"]
            for column in Column.allCases {
                if let value = row.values[column], value.isFinite { fields.append("\"\(column)\":\(value)") }
            }
            let counts = Column.allCases.compactMap { column in
                row.values[column] == nil ? nil : row.counts[column].map { "\"\(column)\":\($0)" }
            }
            if !counts.isEmpty { fields.append("\"counts\":{\(counts.joined(separator: ","))}") }
            let perCall = Column.allCases.compactMap { column -> String? in
                guard row.values[column] != nil, let figures = row.perCall[column], !figures.isEmpty else { return nil }
                let pairs = figures.sorted { $0.key < $1.key }.filter { $0.value.isFinite }.map { "\(quoted($0.key)):\($0.value)" }
                return "\"\(column)\":{\(pairs.joined(separator: ","))}"
            }
            if !perCall.isEmpty { fields.append("\"per_call\":{\(perCall.joined(separator: ","))}") }
            if !row.notes.isEmpty { fields.append("\"notes\":[\(row.notes.map(quoted).joined(separator: ","))]") }
            let load = [("start", row.load.start), ("end", row.load.end)].compactMap { name, value in
                value.map { "\"\(name)\":\($0.json)" }
            }
            if !load.isEmpty { fields.append("\"load\":{\(load.joined(separator: ","))}") }
            parts.append("{\(fields.joined(separator: ","))}")
        }
        return "{\"rows\":[\(parts.joined(separator: ","))],\"cores\":\(machine.cores),"
            + "\"repetitions\":\(machine.repetitions)}"
    }

    /// A fixed-width table of medians, serial/peer ratios and the issue's goals, then the notes.
    static func table(_ rows: [Row], machine: Machine) -> String {
        let header = [
            "row", "unit", "serial", "pooled", "dispatch", "nio", "stdlib", "s/dispatch", "s/nio", "p/dispatch", "goal",
            "ops per rep",
        ]
        var lines: [[String]] = [header]
        for row in rows {
            let value = { (column: Column) in row.values[column].map(formatNumber) ?? "—" }
            let ratio = { (column: Column) in row.ratio(to: column).map(formatNumber) ?? "—" }
            let pooledRatio = row.ratio(of: .pooled, to: .dispatch).map(formatNumber) ?? "—"
            let goals = row.goals.map { goal -> String in
                let mark = goal.isMet(by: row).map { $0 ? "✓" : "✗" } ?? "?"
                return "\(goal.description) \(mark)"
            }
            let counts = Column.allCases.compactMap { column in
                row.values[column] == nil ? nil : row.counts[column].map { "\(column.initial):\(formatCount($0))" }
            }
            lines.append([
                row.name, row.unit, value(.serial), value(.pooled), value(.dispatch), value(.nio), value(.stdlib), ratio(.dispatch),
                ratio(.nio), pooledRatio, goals.joined(separator: ", "), counts.joined(separator: " "),
            ])
        }
        var widths = Array(repeating: 0, count: header.count)
        for line in lines {
            for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        var text = "swift-serial-runtime compare — \(machine.cores) cores (\(machine.cpu)), "
            + "median of \(machine.repetitions) repetitions in one process\n"
        if machine.repetitions < 5 {
            text += "(a profiling run: fewer than 5 repetitions, not a comparison to quote)\n"
        }
        text += "\n"
        for (number, line) in lines.enumerated() {
            let cells = line.enumerated().map { index, cell in
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                // Names left-aligned, figures right-aligned.
                return index < 2 || index >= 10 ? cell + padding : padding + cell
            }
            text += cells.joined(separator: "  ").trimmingTrailingSpaces() + "\n"
            if number == 0 { text += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n" }
        }
        let notes = rows.flatMap { row in row.notes.map { "  \(row.name): \($0)" } }
        if !notes.isEmpty { text += "\nnotes:\n" + notes.joined(separator: "\n") + "\n" }
        text += "\ns/dispatch, s/nio: serial ÷ peer; p/dispatch: pooled ÷ dispatch. Every row is a cost: lower is "
            + "better, a ratio below 1 favours this library.\n"
        text += "ops per rep: operations each column measured per repetition (s serial, p pooled, d dispatch, n nio, "
            + "std stdlib).\n"
        return text
    }

    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
