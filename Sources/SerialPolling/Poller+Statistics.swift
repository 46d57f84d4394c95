import SerialCore

extension Poller: ServiceStatisticsReporting {
    /// The poller's figures in the common shape.
    ///
    /// An item is a poll session started (`start`, also one that ended at once because the
    /// scheduler was gone). Outcomes, counted when the session's one outcome is decided:
    /// `"completed"`, `"failed"`, `"timedOut"`, `"cancelled"` and `"schedulerShutDown"`, one
    /// per `PollOutcome` case. `pending` is 0 or 1.
    /// `late` is 0: a session's deadline ends it `"timedOut"`, it never runs past it. `wakeUps`
    /// counts the poller's delayed work that ran on the scheduler (next-query and
    /// attempt-timeout timers, stale ones included).
    public var serviceStatistics: ServiceStatistics {
        self.state.withLock { state in
            let outcomes = [
                "completed": state.completedSessions, "failed": state.failedSessions,
                "timedOut": state.timedOutSessions, "cancelled": state.cancelledSessions,
                "schedulerShutDown": state.shutDownSessions,
            ]
            let accepted = Int(state.epoch)
            return ServiceStatistics(
                accepted: accepted, pending: accepted - outcomes.values.reduce(0, +), outcomes: outcomes,
                wakeUps: state.timersFired)
        }
    }
}
