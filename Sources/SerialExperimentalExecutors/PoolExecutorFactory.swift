@_spi(ExperimentalCustomExecutors) import _Concurrency
import SerialCore

/// A program's default executors without Dispatch: tasks run on a `WheelTaskExecutor` (a
/// `WorkerPool` of one thread per processor, its sleeps on a timer wheel) and the main actor on a
/// `MainRunLoopExecutor` on the main thread.
///
/// **Experimental.** `ExecutorFactory` is Swift 6.3 SPI, and swiftc 6.3.1 only installs a
/// program's factory when its availability checking is off: name this factory in the main module
/// and build that module with `-Xfrontend -disable-availability-checking` (in SwiftPM,
/// `swiftSettings: [.unsafeFlags(["-Xfrontend", "-disable-availability-checking"])]` on the
/// executable target). The compiler calls the factory before the first line of an `async` main
/// (top-level code with an `await`, or an `async` `@main`); a synchronous main never installs it.
///
/// ```swift
/// import SerialExperimentalExecutors
///
/// typealias DefaultExecutorFactory = PoolExecutorFactory
/// ```
///
/// `Task.sleep` in any task then arms a timer on the default executor's wheel (through
/// `SchedulingExecutor`), the main actor's work runs on the main thread, and the process has no
/// thread but the main one and the pool's (`Examples/DefaultExecutorFactory` checks it in CI).
public struct PoolExecutorFactory: Sendable {
    /// The program's default task executor (made on first use): create queues on its `pool`, or
    /// read its `timers`.
    public static var taskExecutor: WheelTaskExecutor { Self.tasks }

    static let main = MainRunLoopExecutor()
    static let tasks = WheelTaskExecutor(label: "DefaultPool")
}

@_spi(ExperimentalCustomExecutors)
extension PoolExecutorFactory: ExecutorFactory {
    /// The main actor's executor: a run loop on the main thread.
    public static var mainExecutor: any MainExecutor { Self.main }
    /// Where tasks run unless they prefer another executor: a `WheelTaskExecutor` labelled
    /// "DefaultPool", one thread per processor.
    public static var defaultExecutor: any TaskExecutor { Self.tasks }
}
