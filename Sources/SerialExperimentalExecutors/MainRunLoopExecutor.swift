@_spi(ExperimentalCustomExecutors) import _Concurrency
import SerialCore

/// The main actor's executor of `PoolExecutorFactory`: a run loop on the thread that calls
/// `run()`, the main thread (the runtime calls it there once the synchronous part of an `async`
/// main has run). Jobs run one at a time, in the order they were enqueued; no Dispatch.
///
/// **Experimental**, as `ExecutorFactory` (Swift 6.3 SPI) is.
public final class MainRunLoopExecutor: SerialExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var isStopped = false
        /// The thread running `run()`, once it runs.
        var runThread: UInt?
    }

    private let state = ConditionLock(State())

    /// An executor whose jobs wait until a thread calls `run()`.
    public init() {}

    /// Queues `job` for the run loop's thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.state.withLockThenBroadcast { $0.jobs.append(job) }
    }

    /// Runs jobs on the calling thread as they arrive, until `stop()`.
    public func run() throws {
        self.state.withLock { $0.runThread = CurrentThread.id }
        while let batch = self.nextBatch() {
            for job in batch { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
        }
    }

    /// Ends `run()` after the batch it is running.
    public func stop() {
        self.state.withLockThenBroadcast { $0.isStopped = true }
    }

    /// The main actor's executor.
    public var isMainExecutor: Bool { true }

    /// Passes on the thread running `run()`; traps anywhere else, or before `run()`.
    public func checkIsolated() {
        let runThread = self.state.withLock { $0.runThread }
        guard runThread == CurrentThread.id else { ExperimentalMisuse.mainRunLoopNotIsolated() }
    }

    /// Waits for jobs; `nil` once stopped.
    private func nextBatch() -> [UnownedJob]? {
        while true {
            let batch: [UnownedJob]?? = self.state.wait(until: .now() + .seconds(3600)) { state in
                if state.isStopped { return .some(nil) }
                if state.jobs.isEmpty { return nil }
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return .some(state.jobs)
            }
            if let batch { return batch }
        }
    }
}

@_spi(ExperimentalCustomExecutors)
extension MainRunLoopExecutor: MainExecutor {}
