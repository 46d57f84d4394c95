#if Lifecycle  // compiled only with the package trait Lifecycle (see Package.swift)
import SerialRuntime

/// One step of an ordered shutdown (`SerialRuntimeService`): a name, and what to do, returning
/// how many pending items it dropped (ended without running).
public struct ShutdownStage: Sendable {
    /// Names the stage in logs and in the summary.
    public let name: String
    let perform: @Sendable () -> Int

    /// A stage that runs `perform` and reports the number it returns as dropped.
    public init(_ name: String, perform: @escaping @Sendable () -> Int) {
        self.name = name
        self.perform = perform
    }

    /// Shuts `queue` down with `mode`; its drained work runs first, and it counts what was
    /// cancelled (async work and delayed work). Its services' `whenShutDown` handlers run
    /// before this returns.
    public static func shutDown(_ queue: SerialQueue, mode: ShutdownMode = .drain) -> ShutdownStage {
        ShutdownStage("shut down queue \"\(queue.label)\" (\(mode))") {
            let report = queue.shutdown(mode)
            return report.cancelledWork + report.cancelledDelayedWork
        }
    }

    /// Stops `timers`: pending timers are dropped and counted.
    public static func stop(_ timers: TimerService, name: String = "timers") -> ShutdownStage {
        ShutdownStage("stop \(name)") { timers.stop() }
    }

    /// Waits for `queue` to run everything enqueued before this stage (a `sync` at the back of
    /// its FIFO); drops nothing.
    public static func drain(_ queue: SerialQueue) -> ShutdownStage {
        ShutdownStage("drain queue \"\(queue.label)\"") {
            if !queue.isShutDown { queue.sync {} }
            return 0
        }
    }
}

/// What an ordered shutdown did, stage by stage.
public struct ShutdownSummary: Sendable, Hashable, CustomStringConvertible {
    /// Each stage's name and how many items it dropped, in the order they ran.
    public var stages: [(name: String, dropped: Int)] {
        zip(self.names, self.droppedCounts).map { ($0, $1) }
    }
    /// Items dropped by all stages together.
    public var totalDropped: Int { self.droppedCounts.reduce(0, +) }

    private var names: [String] = []
    private var droppedCounts: [Int] = []

    /// An empty summary.
    public init() {}

    mutating func record(_ name: String, dropped: Int) {
        self.names.append(name)
        self.droppedCounts.append(dropped)
    }

    /// Each stage with what it dropped, in the order the stages ran.
    public var description: String {
        self.stages.map { "\($0.name): \($0.dropped) dropped" }.joined(separator: "; ")
    }
}
#endif  // Lifecycle
