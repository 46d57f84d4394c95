import AllocationCounter
import Glibc
import NIOCore
import NIOPosix
import SerialRuntime

/// `actor_call_same_executor` and `actor_roundtrip`: what an `await` into an actor costs.
///
/// Both rows run one loop: a caller actor awaits a method of a callee actor, then touches its own
/// state, so the return to the caller's isolation is needed and cannot be optimised away. Time is
/// read inside the caller, around the loop only. Each column also gives, per call, the process's
/// context switches and allocations, and, for SerialQueues, the items that went through each
/// queue's FIFO (`statistics.submitted`): what proves which hops happened. After the timed loop an
/// untimed pass checks that every call ran on the callee's executor and every return on the
/// caller's.
///
/// - `actor_call_same_executor`: caller and callee share one executor (serial: one dedicated
///   SerialQueue; pooled: one pooled SerialQueue; nio: one event loop). No hop is needed.
/// - `actor_roundtrip`: caller and callee on two executors (two SerialQueues, dedicated or on one
///   pool; two event loops of one thread each): A → B → A, every time.
///
/// `stdlib` is two default actors in both rows: the runtime switches between default actors on
/// the calling thread (no enqueue), so for them a round trip and a same-executor call are one
/// thing. It can do that only for default actors and the generic executor: into an actor on a
/// custom executor it always enqueues.
enum ActorHopRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["actor_call_same_executor"]) { runner in [Self.sameExecutorRow(runner, calls: 1_000_000)] },
        RowPlan(names: ["actor_roundtrip"]) { runner in [Self.roundTripRow(runner, calls: 100_000, nioCalls: 20_000)] },
    ]

    static func sameExecutorRow(_ runner: Runner, calls: Int) -> Row {
        var row = Row(
            name: "actor_call_same_executor", unit: "ns/call",
            goals: [.columnAtMost(.serial, 40), .columnAtMost(.pooled, 40)])
        let name = row.name
        row.notes.append(
            "ns per call into an actor on the caller's own executor, the caller touching its state after each await "
                + "(serial: one dedicated SerialQueue; pooled: one pooled SerialQueue; nio: one event loop; stdlib: two "
                + "default actors, which the runtime switches between inline); items: through the queue's FIFO per "
                + "call, as caller / callee")
        Self.add(to: &row, .serial, runner) {
            let place = HopPlace(SerialQueue(label: "cmp-actor-same"))
            return Self.measure(name, .serial, runner, caller: place, callee: place, calls: calls, expectedItems: (0, 0))
        }
        Self.add(to: &row, .pooled, runner) {
            let place = HopPlace(SerialQueue(label: "cmp-actor-same", pool: PooledPeer.pool))
            return Self.measure(name, .pooled, runner, caller: place, callee: place, calls: calls, expectedItems: (0, 0))
        }
        Self.add(to: &row, .stdlib, runner) { Self.measureDefault(name, runner, calls: calls) }
        Self.add(to: &row, .nio, runner) {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            let place = HopPlace(group.next())
            return Self.measure(name, .nio, runner, caller: place, callee: place, calls: calls, expectedItems: nil)
        }
        row.counts = [.serial: calls, .pooled: calls, .stdlib: calls, .nio: calls]
        return row
    }

    static func roundTripRow(_ runner: Runner, calls: Int, nioCalls: Int) -> Row {
        var row = Row(name: "actor_roundtrip", unit: "ns/round trip", goals: [.columnAtMost(.pooled, 400)])
        let name = row.name
        row.notes.append(
            "ns per forced round trip A → B → A (the caller touches its state after each await) between actors on two "
                + "executors (serial: two dedicated SerialQueues; pooled: two SerialQueues on one WorkerPool; nio: two "
                + "event loops, one group each; stdlib: two default actors, switched inline); items: through the "
                + "caller's / callee's queue per round trip, 1 / 1 when every hop went through the FIFO")
        Self.add(to: &row, .serial, runner) {
            let caller = HopPlace(SerialQueue(label: "cmp-actor-a"))
            let callee = HopPlace(SerialQueue(label: "cmp-actor-b"))
            return Self.measure(name, .serial, runner, caller: caller, callee: callee, calls: calls, expectedItems: (1, 1))
        }
        Self.add(to: &row, .pooled, runner) {
            let caller = HopPlace(SerialQueue(label: "cmp-actor-a", pool: PooledPeer.pool))
            let callee = HopPlace(SerialQueue(label: "cmp-actor-b", pool: PooledPeer.pool))
            return Self.measure(name, .pooled, runner, caller: caller, callee: callee, calls: calls, expectedItems: (1, 1))
        }
        Self.add(to: &row, .stdlib, runner) { Self.measureDefault(name, runner, calls: calls) }
        Self.add(to: &row, .nio, runner) {
            // Two groups of one loop each: two threads for certain.
            let groups = [MultiThreadedEventLoopGroup(numberOfThreads: 1), MultiThreadedEventLoopGroup(numberOfThreads: 1)]
            defer { for group in groups { try? group.syncShutdownGracefully() } }
            let caller = HopPlace(groups[0].next())
            let callee = HopPlace(groups[1].next())
            return Self.measure(name, .nio, runner, caller: caller, callee: callee, calls: nioCalls, expectedItems: nil)
        }
        row.counts = [.serial: calls, .pooled: calls, .stdlib: calls, .nio: nioCalls]
        return row
    }

    // MARK: Measuring

    /// One column's result: its median, its per-call figures, and a note that gives them.
    private struct Measured {
        var median: Double
        var perCall: [String: Double]
        var note: String
    }

    /// Measures `column` into `row`, unless that peer was left out with `--peers`.
    private static func add(to row: inout Row, _ column: Column, _ runner: Runner, _ measure: () -> Measured) {
        guard runner.includes(column) else { return }
        let measured = measure()
        row.values[column] = measured.median
        row.perCall[column] = measured.perCall
        row.notes.append(measured.note)
    }

    /// Runs the loop `repetitions` times after a warm-up.
    private static func measure(
        _ name: String, _ column: Column, _ runner: Runner, caller: HopPlace, callee: HopPlace, calls: Int,
        expectedItems: (caller: Int, callee: Int)?
    ) -> Measured {
        let callerActor = HopCaller(caller)
        let calleeActor = HopCallee(callee)
        var figures: [HopFigures] = []
        let median = runner.median(
            "\(name) \(column)", warmUp: { _ = Self.once(callerActor, calleeActor, calls: calls / 10) }
        ) {
            let figure = Self.once(callerActor, calleeActor, calls: calls)
            figures.append(figure)
            return figure.nanoseconds
        }
        return Self.summary(name, column, median, figures, expectedItems: expectedItems)
    }

    private static func measureDefault(_ name: String, _ runner: Runner, calls: Int) -> Measured {
        let caller = DefaultHopCaller()
        let callee = DefaultHopCallee()
        var figures: [HopFigures] = []
        let median = runner.median(
            "\(name) stdlib", warmUp: { _ = Self.onceDefault(caller, callee, calls: calls / 10) }
        ) {
            let figure = Self.onceDefault(caller, callee, calls: calls)
            figures.append(figure)
            return figure.nanoseconds
        }
        return Self.summary(name, .stdlib, median, figures, expectedItems: nil)
    }

    private static func once(_ caller: HopCaller, _ callee: HopCallee, calls: Int) -> HopFigures {
        Self.counting(calls: calls) { await caller.run(callee, calls: calls) }
    }

    private static func onceDefault(_ caller: DefaultHopCaller, _ callee: DefaultHopCallee, calls: Int) -> HopFigures {
        Self.counting(calls: calls) { await caller.run(callee, calls: calls) }
    }

    /// Runs `loop` in a task, waiting on this (non-cooperative) thread, and adds the process's
    /// context switches and allocations over it, per call.
    private static func counting(calls: Int, _ loop: @escaping @Sendable () async -> HopFigures) -> HopFigures {
        let result = ResultBox<HopFigures>()
        let done = Latch()
        let switches = Clock.processContextSwitches()
        let allocations = allocation_counter_start()
        Task.detached {
            result.value = await loop()
            done.countDown()
        }
        done.wait(seconds: 300, "actor hop loop")
        let allocated = allocation_counter_stop() - allocations
        var figures = result.value!
        figures.switches = Double(Clock.processContextSwitches() - switches) / Double(calls)
        figures.allocations = Double(allocated) / Double(calls)
        return figures
    }

    /// A column's medians of switches, allocations and items per call, and a note that gives
    /// them, the spread of the repetitions, and any check that failed.
    private static func summary(
        _ name: String, _ column: Column, _ median: Double, _ figures: [HopFigures],
        expectedItems: (caller: Int, callee: Int)?
    ) -> Measured {
        var perCall = [
            "switches": Statistics.median(figures.map(\.switches)),
            "allocations": Statistics.median(figures.map(\.allocations)),
        ]
        var note = "\(column): \(formatSmall(perCall["switches"]!)) context switches and "
            + "\(formatSmall(perCall["allocations"]!)) allocations per call"
        let counted = figures.compactMap { figure in figure.items.map { (caller: $0.caller, callee: $0.callee) } }
        if !counted.isEmpty {
            let caller = Statistics.median(counted.map(\.caller))
            let callee = Statistics.median(counted.map(\.callee))
            perCall["items_caller"] = caller
            perCall["items_callee"] = callee
            note += ", items \(formatNumber(caller)) / \(formatNumber(callee))"
            if let expected = expectedItems {
                let wrong = counted.filter { $0.caller != Double(expected.caller) || $0.callee != Double(expected.callee) }
                if !wrong.isEmpty {
                    let what = expected == (0, 0) ? "the calls were not inline" : "the loop did not make the hops this row measures"
                    note += " (CHECK FAILED: not \(expected.caller) / \(expected.callee) in \(wrong.count) of "
                        + "\(counted.count) repetitions: \(what))"
                    log("  \(name) \(column): CHECK FAILED: items per call were not \(expected.caller) / \(expected.callee): \(what)")
                }
            }
        }
        let values = figures.map(\.nanoseconds)
        note += "; repetitions \(formatNumber(values.min()!))–\(formatNumber(values.max()!)) ns"
        if figures.contains(where: { !$0.placed }) {
            note += " (CHECK FAILED: a call or a return ran off its actor's executor)"
            log("  \(name) \(column): CHECK FAILED: a call or a return ran off its actor's executor")
        }
        return Measured(median: median, perCall: perCall, note: note)
    }
}

/// Like `formatNumber`, but a figure below 0.001 keeps two significant digits ("1.6e-4"), so a
/// per-call count of a few in a million does not read as zero.
func formatSmall(_ value: Double) -> String {
    guard value != 0, abs(value) < 0.001 else { return formatNumber(value) }
    var exponent = 0
    var mantissa = abs(value)
    while mantissa < 1 {
        mantissa *= 10
        exponent -= 1
    }
    let rounded = (mantissa * 10).rounded() / 10
    return "\(value < 0 ? "-" : "")\(rounded)e\(exponent)"
}

/// Where a hop row's actor runs: its executor, whether the calling thread runs it now, and the
/// items its own counters have seen (`nil`: it keeps none).
struct HopPlace: Sendable {
    let executor: UnownedSerialExecutor
    let isCurrent: @Sendable () -> Bool
    let items: @Sendable () -> Int?

    init(_ queue: SerialQueue) {
        self.executor = queue.asUnownedSerialExecutor()
        self.isCurrent = { queue.isCurrent }  // the closures keep the queue alive
        self.items = { queue.statistics.submitted }
    }

    init(_ loop: any EventLoop) {
        self.executor = loop.executor.asUnownedSerialExecutor()
        self.isCurrent = { loop.inEventLoop }
        self.items = { nil }
    }
}

/// What one repetition saw, per call.
struct HopFigures: Sendable {
    var nanoseconds: Double
    /// Items per call through the caller's and the callee's queue (`nil`: no counters).
    var items: (caller: Double, callee: Double)?
    /// Every call of the untimed check pass ran on the callee's executor, every return on the caller's.
    var placed: Bool
    var switches: Double = 0
    var allocations: Double = 0
}

/// Calls made in the untimed pass that checks where calls and returns ran.
private let placementChecks = 1_000

actor HopCaller {
    let place: HopPlace
    private var returns = 0

    init(_ place: HopPlace) { self.place = place }
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.place.executor }

    func run(_ callee: HopCallee, calls: Int) async -> HopFigures {
        let here = self.place.items()
        let there = callee.place.items()
        let start = Clock.now()
        for _ in 0..<calls {
            await callee.call()
            self.returns &+= 1  // needs this actor's isolation: the hop back cannot be left out
        }
        let elapsed = Clock.now() - start
        var items: (caller: Double, callee: Double)? = nil
        if let here, let there, let hereAfter = self.place.items(), let thereAfter = callee.place.items() {
            items = (Double(hereAfter - here) / Double(calls), Double(thereAfter - there) / Double(calls))
        }
        var placed = self.place.isCurrent()
        for _ in 0..<placementChecks {
            let calleePlaced = await callee.isPlaced()
            placed = placed && calleePlaced && self.place.isCurrent()
        }
        if self.returns == -1 { log("") }
        return HopFigures(
            nanoseconds: Double(elapsed) / Double(calls), items: items, placed: placed)
    }
}

actor HopCallee {
    let place: HopPlace
    private var calls = 0

    init(_ place: HopPlace) { self.place = place }
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.place.executor }

    func call() { self.calls &+= 1 }

    func isPlaced() -> Bool { self.place.isCurrent() }
}

actor DefaultHopCaller {
    private var returns = 0

    func run(_ callee: DefaultHopCallee, calls: Int) async -> HopFigures {
        let start = Clock.now()
        for _ in 0..<calls {
            await callee.call()
            self.returns &+= 1
        }
        let elapsed = Clock.now() - start
        if self.returns == -1 { log("") }
        return HopFigures(nanoseconds: Double(elapsed) / Double(calls), items: nil, placed: true)
    }
}

actor DefaultHopCallee {
    private var calls = 0
    func call() { self.calls &+= 1 }
}

/// A value handed from a task to the thread waiting on a latch (which orders the write before the read).
final class ResultBox<T>: @unchecked Sendable {  // written once by the task, read after the latch
    var value: T?
}
