import SerialCore

extension RequestQueue: ServiceStatisticsReporting {
    /// The queue's figures in the common shape, derived from `statistics` in one lock trip.
    ///
    /// An item is a request submitted (refused ones after shutdown included: they end
    /// `"failed"` at once). Outcomes: `"succeeded"`, `"servedFromCache"`, `"cancelled"`,
    /// `"timedOut"`, and `"failed"` for every other error (shutdown and refusal included), so
    /// `"cancelled"` and `"timedOut"` are not also in `"failed"` here as they are in
    /// `RequestQueueStatistics.failed`. `late` is 0: a request has no deadline beyond its
    /// timeout, which ends it `"timedOut"`. `wakeUps` is 0: the queue arms its timeouts and
    /// retries as delayed work on its scheduler and does not count them.
    public var serviceStatistics: ServiceStatistics {
        let statistics = self.statistics
        let outcomes = [
            "succeeded": statistics.succeeded, "servedFromCache": statistics.servedFromCache,
            "cancelled": statistics.cancelled, "timedOut": statistics.timedOut,
            "failed": statistics.failed - statistics.cancelled - statistics.timedOut,
        ]
        return ServiceStatistics(
            accepted: statistics.submitted, pending: statistics.submitted - statistics.completed,
            outcomes: outcomes)
    }
}
