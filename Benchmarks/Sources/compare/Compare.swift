import ArgumentParser
import Glibc

/// The command line (swift-argument-parser: `--help` generated, every value checked with a message
/// naming what was wrong). The same flags as before: `--json`, `--repetitions N`, `--only rows`,
/// `--peers peers`, and the hidden child-process modes the rows start themselves.
struct CompareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "SerialQueue, DispatchQueue and SwiftNIO side by side on the same work, in one run.",
        discussion: """
            Prints a table of medians and ratios, or with --json exactly one JSON object \
            {"rows":[…]} on stdout (progress goes to stderr). Rows: \(RowPlan.order.joined(separator: ", ")).
            """)

    @Flag(help: "Print exactly one JSON object {\"rows\":[…]} on stdout (progress goes to stderr).")
    var json = false

    @Option(
        help: """
            Repetitions per figure; the median is reported. Below 5 only for profiling (e.g. under \
            valgrind): the table then says so.
            """)
    var repetitions = 5

    @Option(help: ArgumentHelp("Run only these rows (comma separated), e.g. --only async_1p,pingpong_p50.", valueName: "rows"))
    var only: String?

    @Option(help: ArgumentHelp("Measure only these columns: serial, pooled, dispatch, nio, stdlib (default all).", valueName: "peers"))
    var peers: String?

    // Internal: the child processes of rows that need a fresh process (see PoolRows, TimerMemoryRows
    // and AsyncTimeRows). Each prints its figures on stdout and exits.
    @Option(name: .customLong("pooled-memory"), help: .hidden)
    var pooledMemory: Int?

    @Option(name: .customLong("timer-memory"), parsing: .upToNextOption, help: .hidden)
    var timerMemory: [String] = []

    @Option(name: .customLong("async-time"), parsing: .upToNextOption, help: .hidden)
    var asyncTime: [String] = []

    /// The rows named by `--only`; empty for all.
    var onlyRows: Set<String> { Set((self.only ?? "").split(separator: ",").map(String.init)) }

    /// The columns named by `--peers`; every column without it.
    var selectedPeers: Set<Column> {
        guard let peers = self.peers else { return Set(Column.allCases) }
        return Set(peers.split(separator: ",").compactMap { Column(rawValue: String($0)) })
    }

    func validate() throws {
        guard self.repetitions >= 1 else {
            throw ValidationError("--repetitions needs a whole number of at least 1 (5 or more for a comparison), got \(self.repetitions)")
        }
        if let only = self.only {
            let rows = self.onlyRows
            guard !rows.isEmpty else { throw ValidationError("--only needs a comma-separated list of row names, got \"\(only)\"") }
            let unknown = rows.subtracting(RowPlan.order)
            guard unknown.isEmpty else {
                throw ValidationError("--only: unknown row(s) \(unknown.sorted()); rows are \(RowPlan.order.joined(separator: ", "))")
            }
        }
        if let peers = self.peers {
            let names = peers.split(separator: ",")
            guard !names.isEmpty else { throw ValidationError("--peers needs a comma-separated list: serial,pooled,dispatch,nio,stdlib") }
            for name in names where Column(rawValue: String(name)) == nil {
                throw ValidationError("--peers: unknown peer \"\(name)\"; peers are serial, pooled, dispatch, nio, stdlib")
            }
        }
        if let count = self.pooledMemory, count < 1 {
            throw ValidationError("--pooled-memory needs a count of at least 1, got \(count)")
        }
        if !self.timerMemory.isEmpty {
            guard self.timerMemory.count == 2, TimerMemoryRows.Mode(rawValue: self.timerMemory[0]) != nil,
                let count = Int(self.timerMemory[1]), count >= 1
            else { throw ValidationError("--timer-memory needs a mode (service or cancel) and a count, got \(self.timerMemory)") }
        }
        if !self.asyncTime.isEmpty {
            guard self.asyncTime.count == 3, AsyncTimeRows.Mode(rawValue: self.asyncTime[0]) != nil,
                AsyncTimeRows.Peer(rawValue: self.asyncTime[1]) != nil, let count = Int(self.asyncTime[2]), count >= 1
            else {
                throw ValidationError(
                    "--async-time needs a mode (sleep-cancel or deadline), a peer (serial or stdlib) and a count, got \(self.asyncTime)")
            }
        }
    }
}

/// The comparison run: measures every row for every peer that has an equivalent, prints the table
/// (or one JSON object with `--json`).
enum Compare {
    static func main(_ options: CompareCommand) {
        if let count = options.pooledMemory {
            print(PoolRows.pooledMemory(count: count))
            exit(0)
        }
        if let mode = options.timerMemory.first.flatMap(TimerMemoryRows.Mode.init(rawValue:)) {
            print(TimerMemoryRows.measure(mode, count: Int(options.timerMemory[1])!).map { String($0) }.joined(separator: " "))
            exit(0)
        }
        if let mode = options.asyncTime.first.flatMap(AsyncTimeRows.Mode.init(rawValue:)),
            let peer = AsyncTimeRows.Peer(rawValue: options.asyncTime[1])
        {
            print(AsyncTimeRows.measure(mode, peer, count: Int(options.asyncTime[2])!).map { String($0) }.joined(separator: " "))
            exit(0)
        }
        if options.repetitions < 5 {
            log("compare: \(options.repetitions) repetitions: a profiling run, not a comparison (use ≥ 5)")
        }
        Runner.selectedPeers = options.selectedPeers
        let only = options.onlyRows
        let machine = Machine(cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), cpu: cpuModel(), repetitions: options.repetitions)
        let runner = Runner(repetitions: options.repetitions)
        log("compare: \(machine.cores) cores, \(options.repetitions) repetitions")
        let started = Clock.now()
        var rows: [Row] = []
        for plan in RowPlan.all where only.isEmpty || !only.isDisjoint(with: plan.names) {
            log("\(plan.names.joined(separator: ", ")):")
            let loadAtStart = LoadAverage.now()
            var planned = plan.run(runner).filter { only.isEmpty || only.contains($0.name) }
            let loadAtEnd = LoadAverage.now()
            for index in planned.indices { planned[index].load = (loadAtStart, loadAtEnd) }
            rows += planned
        }
        rows.sort { lhs, rhs in RowPlan.order.firstIndex(of: lhs.name)! < RowPlan.order.firstIndex(of: rhs.name)! }
        log("compare: finished in \(formatNumber(Double(Clock.now() - started) / 1e9)) s")
        print(options.json ? Output.json(rows, machine: machine) : Output.table(rows, machine: machine))
    }

    /// The CPU model from /proc/cpuinfo, for the table's header.
    static func cpuModel() -> String {
        guard let text = readTextFile("/proc/cpuinfo") else { return "unknown CPU" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: " \t")
            }
        }
        return "unknown CPU"
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}

/// The whole text of a small file (e.g. under /proc), or `nil` when it cannot be read.
func readTextFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 { return nil }
        if count == 0 { break }
        bytes += chunk[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
