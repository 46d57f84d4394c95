import SerialRuntime
import SerialTesting
import Synchronization

// The examples of Simulation's doc comment and of the Simulation article: compiled, not run
// (running a scenario needs a build with the Simulation trait, and traps without it).

func simulationDocCommentExample() {
    // example: Simulation
    let report = Simulation(strategy: .pct(depth: 3)).explore(seeds: 0..<100) {
        let queue = SerialQueue(label: "db")
        let log = LockedLog()                    // a log type of your own
        queue.async { log.append(1) }
        queue.sync { log.append(2) }
        Simulation.check(log.values == [1, 2], "sync ran before earlier async work: \(log.values)")
    }
    // A failure prints: simulation failed (failed check) … replay: sim1:pct3:17:212:…
    // Replay it: Simulation.replay("sim1:pct3:17:212:…") { same scenario }, or set
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
