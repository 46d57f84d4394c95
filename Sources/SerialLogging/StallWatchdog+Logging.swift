#if Logging  // compiled only with the package trait Logging (see Package.swift)
import Logging
import SerialRuntime

extension StallWatchdog {
    /// A watchdog that logs each stall once, as a warning on `logger`, with the stall's figures
    /// as metadata (`queue`, `stall`, `duration_ms`, `thread`, `waiting`).
    ///
    /// ```swift
    /// let watchdog = StallWatchdog(logger: Logger(label: "runtime"), runningThreshold: .seconds(2))
    /// watchdog.watch(queue)
    /// ```
    public convenience init(
        logger: Logger,
        runningThreshold: Duration = .seconds(1),
        waitingThreshold: Duration = .seconds(1),
        checkInterval: Duration? = nil
    ) {
        self.init(runningThreshold: runningThreshold, waitingThreshold: waitingThreshold, checkInterval: checkInterval) {
            stall in
            logger.warning("\(stall)", metadata: stall.loggingMetadata)
        }
    }
}

extension StallWatchdog.Stall {
    /// The stall's figures as swift-log metadata.
    public var loggingMetadata: Logger.Metadata {
        var metadata: Logger.Metadata = [
            "queue": "\(self.queueLabel)",
            "stall": "\(self.kind == .running ? "running" : "waiting")",
            "duration_ms": "\(self.duration.components.seconds * 1_000 + self.duration.components.attoseconds / 1_000_000_000_000_000)",
            "waiting": "\(self.waitingItems)",
        ]
        if let thread = self.threadID { metadata["thread"] = "\(thread)" }
        return metadata
    }
}
#endif  // Logging
