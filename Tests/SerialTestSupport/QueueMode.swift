import SerialCore

/// The two ways a `SerialQueue` can run: on a thread of its own, or on a shared `WorkerPool`.
/// Suites take it as a test argument (`@Test(arguments: QueueMode.allCases)`) so every guarantee
/// is checked in both modes.
public enum QueueMode: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    case dedicated
    case pooled

    /// The pool every pooled test queue runs on: one for the whole process, so queues of
    /// parallel tests really share its few threads.
    public static let testPool = WorkerPool(threads: 3, label: "test-pool")

    /// A new queue in this mode.
    public func queue(label: String, maximumQueued: Int = .max) -> SerialQueue {
        switch self {
        case .dedicated: SerialQueue(label: label, maximumQueued: maximumQueued)
        case .pooled: SerialQueue(label: label, pool: Self.testPool, maximumQueued: maximumQueued)
        }
    }

    public var description: String { self.rawValue }
}
