import Logging
import ServiceLifecycle
import Synchronization
import SerialLifecycle
import SerialLogging
import SerialMetrics
import SerialRuntime
import Testing

// The integrations examples of README.md and of the doc comments under Integrations/Sources,
// as `// example:` regions that scripts/check-readme-examples.sh compares with them.

@Suite("README examples: integrations")
struct ReadmeIntegrationExamples {
    @Test func integrations() throws {
        let logger = Logger(label: "runtime")
        let db = SerialQueue(label: "db")
        let timerQueue = SerialQueue(label: "timers")
        let timers = TimerService(scheduler: timerQueue)
        // example: README integrations
        let watchdog = StallWatchdog(logger: logger, runningThreshold: .seconds(2))   // stalls as warnings
        watchdog.watch(db)

        let reporter = SerialMetricsReporter()            // MetricsSystem's factory
        reporter.watch(db)                                // serial_queue_* counters, gauges and a timer, [queue: "db"]
        reporter.addGauge("serial_timers_pending") { Double(timers.pendingCount) }
        reporter.start(every: .seconds(10), on: db)

        let runtime = SerialRuntimeService(logger: logger, stages: [
            .drain(db), .stop(timers), .shutDown(db), .shutDown(timerQueue),   // stop in this order
        ])
        // ServiceGroup(services: [server, runtime], gracefulShutdownSignals: [.sigterm], logger: logger)
        // end example
        _ = runtime
        reporter.stop()
        watchdog.stop()
    }

    @Test func loggingWatchdog() {
        let queue = SerialQueue(label: "q")
        // example: StallWatchdog logger
        let watchdog = StallWatchdog(logger: Logger(label: "runtime"), runningThreshold: .seconds(2))
        watchdog.watch(queue)
        // end example
        watchdog.stop()
    }

    @Test func metricsReporter() {
        let db = SerialQueue(label: "db")
        let timerQueue = SerialQueue(label: "timers")
        let timers = TimerService(scheduler: timerQueue)
        // example: SerialMetricsReporter
        let reporter = SerialMetricsReporter()      // MetricsSystem's factory
        reporter.watch(db)
        reporter.addGauge("serial_timers_pending", dimensions: [("service", "timeouts")]) {
            Double(timers.pendingCount)
        }
        reporter.start(every: .seconds(10), on: db)  // or call update() yourself
        // end example
        reporter.stop()
    }
}

/// The `SerialRuntimeService` doc example: compiled, not run (its group would wait for a signal).
func serialRuntimeServiceDocExample(
    logger: Logger, worker: SerialQueue, timers: TimerService, timerQueue: SerialQueue
) async throws {
    // example: SerialRuntimeService
    let accepting = Atomic<Bool>(true)  // your server checks it before taking work
    let service = SerialRuntimeService(logger: logger, stages: [
        ShutdownStage("stop accepting work") { accepting.store(false, ordering: .relaxed); return 0 },
        .drain(worker),                            // let accepted work finish
        .stop(timers),                             // pending timers end, counted as dropped
        .shutDown(worker), .shutDown(timerQueue),  // queues last
    ])
    let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)
    try await group.run()
    // end example
}
