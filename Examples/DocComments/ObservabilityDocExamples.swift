import SerialRuntime
import Testing

// The examples of statistics and the stall watchdog (README and doc comments).

@Suite("Doc examples: statistics and StallWatchdog")
struct ObservabilityDocExamples {
    @Test func stallWatchdog() {
        // example: StallWatchdog
        let watchdog = StallWatchdog(runningThreshold: .seconds(2)) { stall in
            print("stall:", stall)   // on the watchdog's own thread
        }
        let db = SerialQueue(label: "db")
        watchdog.watch(db)
        // end example
        watchdog.stop()
    }

    @Test func readmeStatisticsAndWatchdog() {
        let db = SerialQueue(label: "db")
        db.async {}
        db.sync {}
        // example: README statistics and watchdog
        let figures = db.statistics      // submitted, executed, dropped, depth, highWaterDepth, syncWaits, waitTime
        print(figures.waitTime.p99)      // per timed batch, how long its oldest item waited (power-of-two buckets)

        let watchdog = StallWatchdog(runningThreshold: .seconds(2), waitingThreshold: .seconds(2)) { stall in
            print(stall)  // SerialQueue "db": one piece of work has run for at least 2.0 seconds on thread 812; …
        }
        watchdog.watch(db)
        // end example
        watchdog.stop()
        #expect(figures.depth == 0)
    }
}

@Suite("Doc examples: WorkerPool")
struct WorkerPoolDocExamples {
    @Test func workerPool() {
        // example: WorkerPool
        let pool = WorkerPool(threads: 4)
        let queues = (0..<10_000).map { SerialQueue(label: "conn-\($0)", pool: pool) }
        // end example
        queues.first?.sync {}
        pool.shutdown()
    }
}
