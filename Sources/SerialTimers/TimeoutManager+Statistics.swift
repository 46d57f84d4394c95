import SerialCore

extension TimeoutManager: ServiceStatisticsReporting {
    /// The manager's figures in the common shape.
    ///
    /// An item is a task started (a `run` or `start` call that joined a task in flight is not
    /// one: it shares that task's outcome). Outcomes: `"completed"`, `"failed"`, `"timedOut"`,
    /// `"cancelled"`, `"schedulerShutDown"`, counted when the outcome is decided, by the kind
    /// its completions receive (a decided result whose delivery the scheduler's shutdown
    /// dropped counts as `"schedulerShutDown"`). `late` is `lateResultCount`: results that
    /// arrived after their task had ended, a timeout included. `wakeUps` is the wake-up count
    /// of the manager's deadline timers (read just after the rest, in a second lock trip).
    public var serviceStatistics: ServiceStatistics {
        var statistics = self.state.withLock { state in
            var outcomes: [String: Int] = [:]
            for kind in OutcomeKind.allCases { outcomes[kind.name] = state.ended[kind.rawValue] }
            let ended = state.ended.reduce(0, +)
            return ServiceStatistics(
                accepted: state.started, pending: state.started - ended, outcomes: outcomes, late: state.lateResults)
        }
        statistics.wakeUps = self.timers.wakeUpCount
        return statistics
    }
}
