#if Lifecycle  // compiled only with the package trait Lifecycle (see Package.swift)
import Logging
import SerialRuntime
import ServiceLifecycle

/// A swift-service-lifecycle `Service` that owns queues and services of this runtime and, when
/// the group shuts down (gracefully or by cancellation), stops them in the order given, logging
/// and reporting what each stage dropped.
///
/// ```swift
/// let accepting = Atomic<Bool>(true)  // your server checks it before taking work
/// let service = SerialRuntimeService(logger: logger, stages: [
///     ShutdownStage("stop accepting work") { accepting.store(false, ordering: .relaxed); return 0 },
///     .drain(worker),                            // let accepted work finish
///     .stop(timers),                             // pending timers end, counted as dropped
///     .shutDown(worker), .shutDown(timerQueue),  // queues last
/// ])
/// let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// The usual order is: stop accepting new work, drain what was accepted, stop timers, shut the
/// queues down. Stages run one after another on the service's task; each runs exactly once.
/// After the last, `onFinished` receives the summary.
public struct SerialRuntimeService: Service {
    private let logger: Logger
    private let stages: [ShutdownStage]
    private let onFinished: @Sendable (ShutdownSummary) -> Void

    /// A service that runs `stages`, in order, when its group shuts down.
    public init(
        logger: Logger, stages: [ShutdownStage], onFinished: @escaping @Sendable (ShutdownSummary) -> Void = { _ in }
    ) {
        self.logger = logger
        self.stages = stages
        self.onFinished = onFinished
    }

    /// Waits for the group's graceful shutdown (or cancellation), then runs the stages.
    public func run() async throws {
        // Throws CancellationError when the group is cancelled instead: the stages run either way.
        try? await gracefulShutdown()
        var summary = ShutdownSummary()
        for stage in self.stages {
            let dropped = stage.perform()
            summary.record(stage.name, dropped: dropped)
            if dropped == 0 {
                self.logger.info("shutdown: \(stage.name)", metadata: ["dropped": "0"])
            } else {
                self.logger.warning("shutdown: \(stage.name) dropped \(dropped) item(s)", metadata: ["dropped": "\(dropped)"])
            }
        }
        self.logger.notice("shutdown complete: \(summary.totalDropped) item(s) dropped", metadata: ["stages": "\(summary)"])
        self.onFinished(summary)
    }
}
#endif  // Lifecycle
