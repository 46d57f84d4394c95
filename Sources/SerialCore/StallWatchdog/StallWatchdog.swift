/// Watches queues and reports, once per stall, any queue whose running work has not finished
/// within `runningThreshold`, or whose oldest waiting item has not started within
/// `waitingThreshold`, naming the queue, the duration and the thread.
///
/// ```swift
/// let watchdog = StallWatchdog(runningThreshold: .seconds(2)) { stall in
///     print("stall:", stall)   // on the watchdog's own thread
/// }
/// let db = SerialQueue(label: "db")
/// watchdog.watch(db)
/// ```
///
/// **How it looks.** One thread, its own. While some watched queue has work it looks at each
/// one every `checkInterval`, under that queue's lock: a stall is work whose progress count
/// (items finished) has not moved for a threshold. Reports go to `report`, on the watchdog's
/// thread, outside every lock; a long report delays the next look, never a queue.
///
/// **Idle costs nothing.** When a look finds every watched queue idle, the watchdog sleeps with
/// no deadline, and each idle queue is armed to wake it the moment it gets work (one signal per
/// idle period of the whole set, not per item). While armed, a queue's `sync` enters through
/// the lock instead of its lock-free door (tens of nanoseconds more), so that work cannot start
/// unseen.
///
/// **Limits.** A duration is a lower bound, seen at the granularity of `checkInterval`. An
/// item the worker has taken in its current batch, behind the one running, still waits: its
/// wait counts from when the batch was taken. A queue times only some of its waits
/// (`QueueStatistics`, "Wait time"; always the ones that begin while this watchdog sleeps armed
/// on it): an untimed wait counts from the first look that sees it, so it is reported up to one
/// `checkInterval` later, and as that much shorter, than a timed one. Delayed work is an item
/// once it has fallen due and entered the FIFO (a pooled queue's enters at its deadline, suspended
/// or not); on a suspended dedicated queue it enters when the queue resumes (its worker does not
/// wake for deadlines meanwhile), so it is not seen waiting before. The
/// thread of a `sync` body that entered an idle queue through the door while the watchdog was
/// awake is not known (`Stall.threadID` is `nil`). Queues are held weakly: a released queue
/// is simply no longer watched. Several watchdogs may watch one queue: each reports its stalls
/// and sleeps and wakes on its own.
public final class StallWatchdog: Sendable {
    /// How long one piece of work may run before it is reported.
    public let runningThreshold: Duration
    /// How long the oldest waiting item may wait before it is reported.
    public let waitingThreshold: Duration
    /// How often the watchdog looks while some watched queue has work.
    public let checkInterval: Duration

    let core: Core
    private let thread: WorkerThread

    /// Starts a watchdog (and its thread, named "StallWatchdog").
    ///
    /// - Parameters:
    ///   - runningThreshold: report work that runs longer than this.
    ///   - waitingThreshold: report an item that waits longer than this to start.
    ///   - checkInterval: how often to look while some queue has work; by default a quarter of
    ///     the smaller threshold (at least 1 ms).
    ///   - report: called once per stall, on the watchdog's thread.
    /// - Precondition: thresholds and interval are positive, and a thread can be started
    ///   (otherwise this traps saying why; `make` throws instead).
    public convenience init(
        runningThreshold: Duration = .seconds(1),
        waitingThreshold: Duration = .seconds(1),
        checkInterval: Duration? = nil,
        report: @escaping @Sendable (Stall) -> Void
    ) {
        do {
            try self.init(
                validatedRunning: runningThreshold, waiting: waitingThreshold, interval: checkInterval, report: report)
        } catch {
            fatalError("StallWatchdog: \(error)")
        }
    }

    /// Starts a watchdog like `init`, but throws when its thread cannot be started.
    ///
    /// - Throws: `SerialQueueError.threadStartFailed` (labelled "StallWatchdog").
    public static func make(
        runningThreshold: Duration = .seconds(1),
        waitingThreshold: Duration = .seconds(1),
        checkInterval: Duration? = nil,
        report: @escaping @Sendable (Stall) -> Void
    ) throws(SerialQueueError) -> StallWatchdog {
        try StallWatchdog(
            validatedRunning: runningThreshold, waiting: waitingThreshold, interval: checkInterval, report: report)
    }

    private init(
        validatedRunning running: Duration, waiting: Duration, interval: Duration?,
        report: @escaping @Sendable (Stall) -> Void
    ) throws(SerialQueueError) {
        let interval = interval ?? max(.milliseconds(1), min(running, waiting) / 4)
        for (name, value) in [("runningThreshold", running), ("waitingThreshold", waiting), ("checkInterval", interval)]
        where value <= .zero {
            fatalError("StallWatchdog(\(name): \(value)): must be positive. Pass the longest stall you accept.")
        }
        let core = Core(
            detector: StallDetector(runningThreshold: running, waitingThreshold: waiting),
            intervalNanoseconds: UInt64(interval.saturatingNanoseconds), report: report)
        do {
            self.thread = try WorkerThread(name: "StallWatchdog", fallbackName: "StallWatchdog") { core.main() }
        } catch {
            throw SerialQueueError.threadStartFailed(label: "StallWatchdog", errno: error.errno, reason: error.reason)
        }
        self.core = core
        self.runningThreshold = running
        self.waitingThreshold = waiting
        self.checkInterval = interval
    }

    deinit {
        self.stop()
    }

    /// Starts watching `queue` (again watching a watched queue does nothing). Held weakly.
    public func watch(_ queue: SerialQueue) {
        self.core.watch(queue.core)
    }

    /// Stops watching `queue`: it is no longer armed to wake this watchdog (a look under way,
    /// which may arm it once more, disarms it again as it ends).
    public func stopWatching(_ queue: SerialQueue) {
        self.core.stopWatching(queue.core)
    }

    /// Stops the watchdog and waits for its thread to exit. Later calls do nothing.
    ///
    /// From the watchdog's own thread (its `report` closure deciding to stop, or dropping the
    /// last reference there) it does not wait for itself: no report starts after the one
    /// running, and the thread exits as soon as that report returns.
    public func stop() {
        guard self.core.stop() else { return }
        if self.thread.isCurrent {
            self.thread.detach()
        } else {
            CurrentQueueStack.current.blocking { self.thread.join() }  // a pool thread keeps its pool's width
        }
    }
}

extension StallWatchdog {
    /// How many looks the watchdog has made (tests: an idle set must not keep this moving).
    package var _lookCount: Int { self.core.lookCount }

    /// Whether the watchdog sleeps with no deadline, waiting for a watched queue to get work.
    package var _isAsleep: Bool { self.core.isAsleepForTesting }

    /// Calls `hook` on the watchdog's thread as each look is about to sample its copy of the
    /// watched queues (`.willSample`, before it arms any) and as it ends (`.ended`); `nil` removes it.
    package func _setLookHook(_ hook: (@Sendable (_LookPhase) -> Void)?) {
        self.core.setLookHook(hook)
    }

    /// Where a look is, for `_setLookHook`.
    package enum _LookPhase: Sendable {
        /// About to sample (and arm) the `queues` queues it copied.
        case willSample(queues: Int)
        /// Done: samples taken, stalls reported.
        case ended
    }
}
