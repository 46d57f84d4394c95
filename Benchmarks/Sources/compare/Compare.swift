import Glibc

/// The comparison run: parses the command line, measures every row for every peer that has an
/// equivalent, prints the table (or one JSON object with `--json`).
enum Compare {
    struct Options {
        var json = false
        var repetitions = 5
        /// Row names to run; empty for all.
        var only: Set<String> = []
    }

    static let usage = """
        usage: compare [--json] [--repetitions N] [--only row[,row...]] [--peers peer[,peer...]]
          --json            print exactly one JSON object {"rows":[…]} on stdout (progress goes to stderr)
          --repetitions N   repetitions per figure (default 5); the median is reported. Below 5 only
                            for profiling (e.g. under valgrind): the table then says so
          --only rows       run only these rows (comma separated), e.g. --only async_1p,pingpong_p50
          --peers peers     measure only these columns: serial, pooled, dispatch, nio, stdlib (default all)
        """

    static func main(arguments: [String]) {
        let options = Self.parse(arguments)
        let machine = Machine(cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), cpu: cpuModel(), repetitions: options.repetitions)
        let runner = Runner(repetitions: options.repetitions)
        log("compare: \(machine.cores) cores, \(options.repetitions) repetitions")
        let started = Clock.now()
        var rows: [Row] = []
        for plan in RowPlan.all where options.only.isEmpty || !options.only.isDisjoint(with: plan.names) {
            log("\(plan.names.joined(separator: ", ")):")
            let loadAtStart = LoadAverage.now()
            var planned = plan.run(runner).filter { options.only.isEmpty || options.only.contains($0.name) }
            let loadAtEnd = LoadAverage.now()
            for index in planned.indices { planned[index].load = (loadAtStart, loadAtEnd) }
            rows += planned
        }
        rows.sort { lhs, rhs in RowPlan.order.firstIndex(of: lhs.name)! < RowPlan.order.firstIndex(of: rhs.name)! }
        log("compare: finished in \(formatNumber(Double(Clock.now() - started) / 1e9)) s")
        print(options.json ? Output.json(rows, machine: machine) : Output.table(rows, machine: machine))
    }

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--json":
                options.json = true
            case "--repetitions":
                guard let value = rest.popFirst().flatMap({ Int($0) }), value >= 1 else {
                    fail("--repetitions needs a whole number of at least 1 (5 or more for a comparison)")
                }
                if value < 5 { log("compare: \(value) repetitions: a profiling run, not a comparison (use ≥ 5)") }
                options.repetitions = value
            case "--only":
                guard let value = rest.popFirst() else { fail("--only needs a comma-separated list of row names") }
                options.only = Set(value.split(separator: ",").map(String.init))
                let unknown = options.only.subtracting(RowPlan.order)
                if !unknown.isEmpty {
                    fail("unknown row(s) \(unknown.sorted()); rows are \(RowPlan.order.joined(separator: ", "))")
                }
            case "--peers":
                guard let value = rest.popFirst() else { fail("--peers needs a comma-separated list: serial,pooled,dispatch,nio,stdlib") }
                var peers = Set<Column>()
                for name in value.split(separator: ",") {
                    guard let column = Column(rawValue: String(name)) else {
                        fail("unknown peer \"\(name)\"; peers are serial, pooled, dispatch, nio, stdlib")
                    }
                    peers.insert(column)
                }
                Runner.selectedPeers = peers
            case "--pooled-memory":
                // Internal: the child process of queues_10k's memory figure; prints MiB on stdout.
                guard let value = rest.popFirst().flatMap({ Int($0) }), value >= 1 else { fail("--pooled-memory needs a count") }
                print(PoolRows.pooledMemory(count: value))
                exit(0)
            case "--timer-memory":
                // Internal: the child process of timers_memory_10m; prints its figures (MiB) on stdout.
                guard let mode = rest.popFirst().flatMap(TimerMemoryRows.Mode.init(rawValue:)),
                    let count = rest.popFirst().flatMap({ Int($0) }), count >= 1
                else { fail("--timer-memory needs a mode (service or cancel) and a count") }
                print(TimerMemoryRows.measure(mode, count: count).map { String($0) }.joined(separator: " "))
                exit(0)
            case "--async-time":
                // Internal: the child process of sleep_cancel_1m and deadline_100k; prints its figures.
                guard let mode = rest.popFirst().flatMap(AsyncTimeRows.Mode.init(rawValue:)),
                    let peer = rest.popFirst().flatMap(AsyncTimeRows.Peer.init(rawValue:)),
                    let count = rest.popFirst().flatMap({ Int($0) }), count >= 1
                else { fail("--async-time needs a mode (sleep-cancel or deadline), a peer (serial or stdlib) and a count") }
                print(AsyncTimeRows.measure(mode, peer, count: count).map { String($0) }.joined(separator: " "))
                exit(0)
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                fail("unknown argument \"\(argument)\"")
            }
        }
        return options
    }

    static func fail(_ message: String) -> Never {
        log("compare: \(message)\n\(usage)")
        exit(64)
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
