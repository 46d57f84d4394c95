#if Logging  // compiled only with the package trait Logging (see Package.swift)
import Logging
import SerialRuntime

extension SerialQueue {
    /// Shuts the queue down (see `shutdown(_:)`) and logs what it dropped: a notice when
    /// nothing was lost, a warning naming the counts when work was dropped.
    ///
    /// - Returns: What was dropped.
    @discardableResult
    public func shutdown(_ mode: ShutdownMode = .drain, logger: Logger) -> ShutdownReport {
        let report = self.shutdown(mode)
        let metadata: Logger.Metadata = [
            "queue": "\(self.label)",
            "cancelled_work": "\(report.cancelledWork)",
            "cancelled_delayed_work": "\(report.cancelledDelayedWork)",
        ]
        if report.cancelledWork + report.cancelledDelayedWork == 0 {
            logger.notice("SerialQueue \"\(self.label)\" shut down; nothing was dropped", metadata: metadata)
        } else {
            let message = "SerialQueue \"\(self.label)\" shut down and dropped \(report.cancelledWork) item(s) and "
                + "\(report.cancelledDelayedWork) delayed item(s) without running them"
            logger.warning("\(message)", metadata: metadata)
        }
        return report
    }
}
#endif  // Logging
