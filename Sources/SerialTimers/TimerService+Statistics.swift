import SerialCore

extension TimerService: ServiceStatisticsReporting {
    /// The service's figures in the common shape.
    ///
    /// An item is a timer scheduled (a `schedule` call that returned a handle, or whose
    /// wake-up was refused: that timer was accepted and ended `"schedulerShutDown"`).
    /// Outcomes: `"fired"`, `"cancelled"`, `"stopped"`, `"schedulerShutDown"`, one per timer
    /// as its `TimerHandle.status`. A repeating timer is one item: its periods do not end it,
    /// only cancel, stop or shutdown do. `late` counts one-shot timers expired at a tick later
    /// than the one their window ends in (for the default tolerance, the tick their deadline
    /// rounds up to; for a precise timer, likewise), measured when the service expired them. `wakeUps`
    /// is `wakeUpCount`.
    public var serviceStatistics: ServiceStatistics {
        self.core.state.withLock { state in
            let outcomes = [
                "fired": state.fired, "cancelled": state.cancelled, "stopped": state.stopped,
                "schedulerShutDown": state.shutDown,
            ]
            let ended = state.fired + state.cancelled + state.stopped + state.shutDown
            return ServiceStatistics(
                accepted: state.accepted, pending: state.accepted - ended, outcomes: outcomes,
                late: state.late, wakeUps: state.wakeUps)
        }
    }
}
