import SerialRuntime
import SerialTesting
import Synchronization

// The examples of Simulation's doc comment and of the Simulation article: compiled, not run
// (running a scenario needs a build with the Simulation trait, and traps without it).

func simulationDocCommentExample() {
    // example: Simulation
    let report = Simulation(strategy: .random).explore(seeds: 0..<200) {
        let account = Account(balance: 100)      // an actor of your own
        async let first = account.withdraw(80)   // each checks the balance, then awaits
        async let second = account.withdraw(80)  // an approval before it debits
        _ = await (first, second)
        let balance = await account.balance
        Simulation.check(balance >= 0, "overdrawn: \(balance)")
    }
    // A failure prints: simulation failed (failed check) … replay: sim1:random:0:41:…
    // Replay it: Simulation.replay("sim1:random:0:41:…") { same scenario }, or set
    // SERIAL_SIMULATION_REPLAY to that token and run the test again.
    // end example
    _ = report
}

func simulationArticleExample() {
    // example: Simulation article
    // swift build --build-tests --traits Simulation --scratch-path .build-sim
    let report = Simulation(strategy: .pct(depth: 3)).explore(seeds: 0..<100) {
        let target = SerialQueue(label: "target")
        let producer = SerialQueue(label: "producer")
        let log = Log()                                  // your own recording type
        producer.async { target.async { log.append("p") } }
        target.async { log.append("main") }
        producer.sync {}
        target.sync {}
        Simulation.check(log.values == ["main", "p"], "order: \(log.values)")   // wrong on purpose
    }
    // stderr, for each failing seed:
    //   simulation failed (failed check) at step 61 (seed 4, strategy pct3); replay: sim1:pct3:4:19:…
    let again = Simulation.replay(report.failures[0].token) { /* the same scenario */ }
    // end example
    _ = again
}

func simulationArticleAsyncExample() {
    // example: Simulation article, async
    let report = Simulation(strategy: .random).explore(seeds: 0..<200) {
        let cache = Cache(backend: Backend())          // an actor of your own
        async let first = cache.value(for: "k")
        async let second = cache.value(for: "k")
        _ = await [first, second]
        let loads = await cache.loads
        Simulation.check(loads == 1, "loaded \(loads) times")
    }
    // end example
    _ = report
}

/// The async examples' actors, each with the bug the simulator finds: a check and an act split
/// by an `await`, where another call into the actor runs.
private actor Account {
    private(set) var balance: Int
    init(balance: Int) { self.balance = balance }

    func withdraw(_ amount: Int) async -> Bool {
        guard self.balance >= amount else { return false }
        await Task.yield()  // an approval: another withdraw runs here
        self.balance -= amount
        return true
    }
}

private actor Backend {
    func load(_ key: String) async -> Int {
        await Task.yield()
        return key.count
    }
}

private actor Cache {
    private let backend: Backend
    private var values: [String: Int] = [:]
    private(set) var loads = 0
    init(backend: Backend) { self.backend = backend }

    func value(for key: String) async -> Int {
        if let value = self.values[key] { return value }
        self.loads += 1
        let value = await self.backend.load(key)  // a second caller runs here, finds no value
        self.values[key] = value
        return value
    }
}

/// The examples' recording types: values appended from any thread, read whole.
private final class LockedLog: Sendable {
    private let storage = Mutex<[Int]>([])
    func append(_ value: Int) { self.storage.withLock { $0.append(value) } }
    var values: [Int] { self.storage.withLock { $0 } }
}

private final class Log: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ value: String) { self.storage.withLock { $0.append(value) } }
    var values: [String] { self.storage.withLock { $0 } }
}
