/// What the watchdog sees of one queue in one look, taken under the queue's lock.
struct StallSample: Equatable {
    var label: String
    /// Someone (the worker, or a `sync` caller) is running the queue's work.
    var isRunning: Bool
    /// Items run so far plus `sync` bodies that left through the lock: moves whenever a piece
    /// of work finishes.
    var progress: Int
    /// When the FIFO's oldest item entered it (monotonic nanoseconds), 0 when empty.
    var oldestWaitingSince: UInt64
    var waitingItems: Int
    /// The thread running the work, if known.
    var runningThread: Int32?
    var workerThread: Int32
}

/// The stall decisions for one watched queue, as a plain value: fed one sample per look with
/// the time of the look, it answers with the stalls to report, each once.
///
/// - Invariant: `progressSeenAt` is the time of the first look that saw `progress` (while the
///   queue was running); a running stall is reported at most once per progress value while the
///   queue runs (a look that finds it not running ends the stretch: work that runs again at the
///   same count is a new stall), a waiting stall at most once per oldest item.
struct StallDetector {
    let runningThreshold: UInt64
    let waitingThreshold: UInt64
    private var progress: Int? = nil
    private var progressSeenAt: UInt64 = 0
    private var reportedProgress: Int? = nil
    private var reportedWaitingSince: UInt64 = 0

    init(runningThreshold: Duration, waitingThreshold: Duration) {
        self.runningThreshold = UInt64(max(1, runningThreshold.saturatingNanoseconds))
        self.waitingThreshold = UInt64(max(1, waitingThreshold.saturatingNanoseconds))
    }

    /// The stalls `sample`, seen at `now` (monotonic nanoseconds), shows for the first time.
    mutating func observe(_ sample: StallSample, now: UInt64) -> [StallWatchdog.Stall] {
        var stalls: [StallWatchdog.Stall] = []
        if sample.isRunning {
            if sample.progress != self.progress {
                self.progress = sample.progress
                self.progressSeenAt = now
            } else if now &- self.progressSeenAt >= self.runningThreshold && self.reportedProgress != sample.progress {
                self.reportedProgress = sample.progress
                stalls.append(
                    StallWatchdog.Stall(
                        kind: .running, queueLabel: sample.label, duration: Self.duration(from: self.progressSeenAt, to: now),
                        threadID: sample.runningThread, waitingItems: sample.waitingItems))
            }
        } else {
            // A new stretch starts at the next look that sees the queue running, maybe at the same
            // count (the worker held the queue between items, then it went idle without another
            // item finishing): its stall is a new one, reported in its turn.
            self.progress = nil
            self.reportedProgress = nil
        }
        let since = sample.oldestWaitingSince
        if since != 0, now > since, now - since >= self.waitingThreshold, self.reportedWaitingSince != since {
            self.reportedWaitingSince = since
            stalls.append(
                StallWatchdog.Stall(
                    kind: .waiting, queueLabel: sample.label, duration: Self.duration(from: since, to: now),
                    threadID: sample.workerThread, waitingItems: sample.waitingItems))
        }
        return stalls
    }

    private static func duration(from start: UInt64, to end: UInt64) -> Duration {
        .nanoseconds(Int64(clamping: end &- start))
    }
}
