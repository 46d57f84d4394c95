import SerialRuntime
import SerialTesting
import Testing

// README.md, section "SerialQueue". `scripts/check-readme-examples.sh` checks that each README
// block is identical to one `// example:` region here (import lines aside).

@Suite("README: SerialQueue")
struct ReadmeSerialQueueExamples {
    @Test func serialQueue() throws {
        // example: README SerialQueue
        let db = SerialQueue(label: "db")                 // starts the worker thread "db"
        db.async { print("on the worker") }              // FIFO, never on the caller's thread
        let rows = try db.sync { try fetchRows() }         // on this thread, after the async work
        let later = db.asyncAfter(delay: .milliseconds(50)) { flush() }
        later.cancel()                                     // true: it will not run
        let inside = db.sync { db.isCurrent }              // true inside its async work and sync bodies
        // end example
        #expect(rows.count == 1)
        #expect(inside)
    }

    @Test func workerPool() async {
        // example: README worker pool
        let pool = WorkerPool(threads: 4)
        let connections = (0..<10_000).map { SerialQueue(label: "conn-\($0)", pool: pool) }  // idle: no thread each
        let total = await withTaskExecutorPreference(pool) {             // tasks run on the pool's threads too
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<100 { group.addTask { index } }
                return await group.reduce(0, +)
            }
        }
        // end example
        #expect(total == 4950)
        for queue in connections { queue.shutdown() }
        pool.shutdown()
    }

    @Test func virtualTime() throws {
        // example: README virtual time
        let scheduler = VirtualScheduler()
        let fired = CallbackRecorder<Void>("fired")
        try scheduler.schedule(after: .seconds(5)) { fired.record() }
        scheduler.advance(by: .seconds(4))   // nothing yet: fired.count == 0
        scheduler.advance(by: .seconds(1))   // fires on this thread, with scheduler.now at its deadline
        // end example
        #expect(fired.count == 1)
    }
}

// example: README actor
actor Store {
    let queue = SerialQueue(label: "store")
    nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }
}
// end example
