import SerialCore

extension CountdownManager: ServiceStatisticsReporting {
    /// The manager's figures in the common shape.
    ///
    /// An item is a countdown registered (a `register` or `countdown(from:)` call that was
    /// not refused; registering a receiver again is a new item, and the old one ends
    /// `"replaced"`). Outcomes, counted when the countdown leaves the table, under the lock:
    /// `"finished"`, `"stopped"`, `"cancelled"` (async sequences whose consumer went away
    /// included), `"replaced"`, `"shutDown"`, and `"receiverReleased"` for countdowns whose
    /// receiver was gone when that was found. A countdown whose end was decided and whose
    /// receiver is released before its terminal call counts under the decided end (it is
    /// then also in `releasedReceiverCount`). `late` counts countdowns that finished more than
    /// one interval after their deadline (the ticker was held up). `wakeUps` counts the shared
    /// ticks that ran on the scheduler, stale ones included.
    public var serviceStatistics: ServiceStatistics {
        self.state.withLock { state in
            let counts = state.counts
            return ServiceStatistics(
                accepted: counts.registered, pending: counts.registered - counts.ended,
                outcomes: [
                    "finished": counts.finished, "stopped": counts.stopped, "cancelled": counts.cancelled,
                    "replaced": counts.replaced, "shutDown": counts.shutDown,
                    "receiverReleased": counts.receiverReleased,
                ],
                late: counts.late, wakeUps: counts.wakeUps)
        }
    }

    /// The counters behind `serviceStatistics`, kept in the manager's locked state.
    struct Counts {
        /// Ends counted by `remove(_:key:as:)`.
        enum End {
            case stopped, cancelled
        }

        var registered = 0
        var finished = 0
        var stopped = 0
        var cancelled = 0
        var replaced = 0
        var shutDown = 0
        var receiverReleased = 0
        var late = 0
        var wakeUps = 0

        var ended: Int { self.finished + self.stopped + self.cancelled + self.replaced + self.shutDown + self.receiverReleased }

        mutating func count(_ end: End) {
            switch end {
            case .stopped: self.stopped += 1
            case .cancelled: self.cancelled += 1
            }
        }
    }
}
