extension StallWatchdog {
    /// One stall of one queue, reported once.
    public struct Stall: Sendable, Hashable, CustomStringConvertible {
        /// What is stuck.
        public enum Kind: Sendable, Hashable {
            /// One piece of the queue's work has been running longer than the threshold.
            case running
            /// The queue's oldest waiting item has waited longer than the threshold (the queue
            /// is busy with something long, or suspended).
            case waiting
        }

        /// What is stuck.
        public let kind: Kind
        /// The queue's label.
        public let queueLabel: String
        /// How long it has been stuck when reported: at least this long (the watchdog looks
        /// every `checkInterval`, so the true figure may exceed it by up to one interval).
        public let duration: Duration
        /// The kernel id of the thread running the queue's work: its worker, or the thread of
        /// the `sync` body holding it. `nil` when a `sync` body entered the idle queue
        /// directly, without the lock, and so left no record of its thread.
        public let threadID: Int32?
        /// Items waiting in the FIFO when the stall was seen.
        public let waitingItems: Int

        /// A stall with these figures (for tests and exporters).
        public init(kind: Kind, queueLabel: String, duration: Duration, threadID: Int32?, waitingItems: Int) {
            self.kind = kind
            self.queueLabel = queueLabel
            self.duration = duration
            self.threadID = threadID
            self.waitingItems = waitingItems
        }

        /// One sentence saying what happened, for logs and error messages.
        public var description: String {
            let thread = self.threadID.map { "thread \($0)" } ?? "a sync caller's thread"
            switch self.kind {
            case .running:
                return "SerialQueue \"\(self.queueLabel)\": one piece of work has run for at least \(self.duration) "
                    + "on \(thread); \(self.waitingItems) item(s) wait behind it"
            case .waiting:
                return "SerialQueue \"\(self.queueLabel)\": its oldest item has waited at least \(self.duration) "
                    + "to start (\(self.waitingItems) waiting; worker \(thread))"
            }
        }
    }
}
