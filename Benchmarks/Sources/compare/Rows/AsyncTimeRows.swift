import Glibc
import SerialRuntime

/// `sleep_cancel_1m` and `deadline_100k`: sleeping and deadlines from async code, this library's
/// wheel (`serial`) against the standard library's `Task.sleep` and the usual task-group race
/// (`stdlib`). Each figure comes from a fresh child process (`compare --async-time MODE PEER N`),
/// so memory freed by earlier rows hides nothing.
enum AsyncTimeRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["sleep_cancel_1m"]) { runner in [Self.sleepCancelRow(runner, count: 1_000_000)] },
        RowPlan(names: ["deadline_100k"]) { runner in [Self.deadlineRow(runner, count: 100_000)] },
    ]

    /// What a child process measures.
    enum Mode: String {
        /// N tasks sleep an hour, are cancelled, and return: the MiB still held after that.
        case sleepCancel = "sleep-cancel"
        /// N operations in a row, each bounded by a 30 s deadline: ns per operation and MiB held after.
        case deadline
    }

    /// Whose sleep or deadline a child process measures.
    enum Peer: String {
        case serial
        case stdlib
    }

    static func sleepCancelRow(_ runner: Runner, count: Int) -> Row {
        var row = Row(name: "sleep_cancel_1m", unit: "MiB", goals: [.ratio(.stdlib, atMost: 0.01)])
        for (column, peer) in [(Column.serial, Peer.serial), (.stdlib, .stdlib)] where runner.includes(column) {
            let figures = Self.child(.sleepCancel, peer, count)
            if figures.count > 1 {
                row.values[column] = figures[1]
                row.notes.append("\(column): \(formatNumber(figures[0])) MiB while \(formatCount(count)) tasks slept")
            }
            row.counts[column] = count
        }
        row.notes.append(
            "MiB of RSS still held after \(formatCount(count)) tasks sleeping 1 h were cancelled and all returned (after "
                + "malloc_trim); serial: WheelClock.sleep, stdlib: Task.sleep; one fresh process each")
        return row
    }

    static func deadlineRow(_ runner: Runner, count: Int) -> Row {
        var row = Row(name: "deadline_100k", unit: "ns/op", goals: [.ratio(.stdlib, atMost: 0.25)])
        for (column, peer) in [(Column.serial, Peer.serial), (.stdlib, .stdlib)] where runner.includes(column) {
            let runs = (0..<runner.repetitions).map { _ in Self.child(.deadline, peer, count) }.filter { $0.count > 1 }
            guard !runs.isEmpty else { continue }
            row.values[column] = Statistics.median(runs.map { $0[0] })
            row.counts[column] = count
            row.notes.append("\(column): \(formatNumber(Statistics.median(runs.map { $0[1] }))) MiB held after the operations")
        }
        row.notes.append(
            "ns per operation bounded by a 30 s deadline (the operation itself returns at once), and MiB of RSS held "
                + "after all of them (after malloc_trim); serial: withWheelDeadline, stdlib: a task group racing the "
                + "operation against Task.sleep, the loser cancelled; a fresh process per repetition")
        return row
    }

    static func child(_ mode: Mode, _ peer: Peer, _ count: Int) -> [Double] {
        guard let output = runChildProcess(["--async-time", mode.rawValue, peer.rawValue, String(count)]) else { return [] }
        return output.split(separator: "\n").last.map { $0.split(separator: " ").compactMap { Double($0) } } ?? []
    }

    /// The child process's side: measures and returns its figures.
    static func measure(_ mode: Mode, _ peer: Peer, count: Int) -> [Double] {
        let done = Latch()
        let figures = LockedFigures()
        Task.detached {
            switch mode {
            case .sleepCancel: figures.set(await Self.sleepCancel(peer, count: count))
            case .deadline: figures.set(await Self.deadlines(peer, count: count))
            }
            done.countDown()
        }
        done.wait(seconds: 600, "\(mode.rawValue) \(peer.rawValue)")
        log("  \(mode.rawValue) \(peer.rawValue) ×\(formatCount(count)): \(figures.get().map(formatNumber))")
        return figures.get()
    }

    private static func sleepCancel(_ peer: Peer, count: Int) async -> [Double] {
        let clock = WheelClock()
        _ = mallocTrim(0)
        let before = residentBytes()
        let started = Counter()
        let held: Double = await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                group.addTask {
                    started.increment()
                    switch peer {
                    case .serial: try? await clock.sleep(for: .seconds(3600))
                    case .stdlib: try? await Task.sleep(for: .seconds(3600))
                    }
                }
            }
            while started.value < count { await Task.yield() }
            if peer == .serial {
                while clock.timers.pendingCount < count { await Task.yield() }
            } else {
                try? await Task.sleep(for: .milliseconds(500))  // every task reached its sleep
            }
            let asleep = Double(residentBytes() - before) / 1_048_576
            group.cancelAll()
            for await _ in group {}
            return asleep
        }
        _ = mallocTrim(0)
        return [held, Double(residentBytes() - before) / 1_048_576]
    }

    private static func deadlines(_ peer: Peer, count: Int) async -> [Double] {
        // A warm-up first, so that one-time costs (threads, the shared timer service, the task
        // allocator's first slabs) are not counted as held by the operations.
        var sum = await Self.boundedOperations(peer, count: 1_000)
        _ = mallocTrim(0)
        let before = residentBytes()
        let start = Clock.now()
        sum &+= await Self.boundedOperations(peer, count: count)
        let elapsed = Clock.now() - start
        _ = mallocTrim(0)
        let held = Double(residentBytes() - before) / 1_048_576
        if sum == 42 { log("") }  // keeps the work from being optimised away
        return [Double(elapsed) / Double(count), held]
    }

    /// Runs `count` operations in a row, each bounded by a 30 s deadline; returns their sum.
    private static func boundedOperations(_ peer: Peer, count: Int) async -> Int {
        var sum = 0
        for index in 0..<count {
            switch peer {
            case .serial:
                sum &+= (try? await withWheelDeadline(after: .seconds(30)) { index }) ?? 0
            case .stdlib:
                sum &+= (try? await raceAgainstSleep(seconds: 30) { index }) ?? 0
            }
        }
        return sum
    }

    /// The usual timeout: the operation and a sleeping task race in a group, the loser cancelled.
    private static func raceAgainstSleep<Value: Sendable>(
        seconds: Int, _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withThrowingTaskGroup(of: Value.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                throw CancellationError()
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }
}

/// A counter shared by many tasks.
private final class Counter: @unchecked Sendable {  // guarded by `lock`
    private var lock = pthread_mutex_t()
    private var count = 0
    init() { pthread_mutex_init(&self.lock, nil) }
    func increment() {
        pthread_mutex_lock(&self.lock)
        self.count += 1
        pthread_mutex_unlock(&self.lock)
    }
    var value: Int {
        pthread_mutex_lock(&self.lock)
        defer { pthread_mutex_unlock(&self.lock) }
        return self.count
    }
}

/// Figures handed from the measuring task to the main thread.
private final class LockedFigures: @unchecked Sendable {  // guarded by `lock`
    private var lock = pthread_mutex_t()
    private var figures: [Double] = []
    init() { pthread_mutex_init(&self.lock, nil) }
    func set(_ figures: [Double]) {
        pthread_mutex_lock(&self.lock)
        self.figures = figures
        pthread_mutex_unlock(&self.lock)
    }
    func get() -> [Double] {
        pthread_mutex_lock(&self.lock)
        defer { pthread_mutex_unlock(&self.lock) }
        return self.figures
    }
}
