import SerialCore

extension TimerService {
    /// How a timer's tolerance files it. A callback runs within [deadline, deadline + tolerance],
    /// never early; what differs is where the timer waits and when the service wakes for it.
    enum Filing: Equatable {
        /// The wheel, woken for at the tick its window ends: the default tolerance (one tick:
        /// the tick its deadline rounds up to) and tolerances of a tick or more (the last tick
        /// inside the window, so timers whose windows overlap share that wake-up).
        case wheel
        /// The precise heap, woken for at the exact deadline: tolerances under one tick.
        case precise

        /// The filing for `tolerance` nanoseconds (`nil`: the default).
        init(tolerance: UInt64?, tickNanoseconds: UInt64) {
            self = (tolerance.map { $0 < tickNanoseconds } ?? false) ? .precise : .wheel
        }
    }

    /// A timer scheduled with a tolerance: the one field a default timer has no room for (the
    /// default one-shot timer stays one 64-byte chunk; this one is 80). A tolerance of a tick
    /// or more keeps it in the wheel until the last tick inside its window; less files it in
    /// the precise heap (`Filing`).
    class TolerantTimer: Timer, @unchecked Sendable {  // under the core's lock
        /// Nanoseconds, or `UInt64.max` for the default (one tick).
        final var storedTolerance: UInt64

        init(deadline: MonotonicInstant, tolerance: UInt64?, stage: Stage) {
            self.storedTolerance = tolerance ?? .max
            super.init(deadline: deadline, stage: stage)
        }

        override final func tolerance() -> UInt64? {
            self.storedTolerance == .max ? nil : self.storedTolerance
        }

        /// The last tick at or before `deadline + tolerance` (never before `due`): waking there
        /// is inside the window, and every timer whose window has begun by then fires with it.
        override final func latestTick(due: UInt64, clock: TickClock) -> UInt64 {
            guard self.storedTolerance != .max else { return due }
            let (end, overflow) = self.deadline.nanoseconds.addingReportingOverflow(self.storedTolerance)
            return max(due, clock.tickAtOrBefore(MonotonicInstant(nanoseconds: overflow ? .max : end)))
        }
    }
}

extension Duration {
    /// A timer's tolerance in nanoseconds (`nil` stays the default); a negative one traps.
    func toleranceNanoseconds() -> UInt64 {
        let nanoseconds = self.saturatingNanoseconds
        if nanoseconds < 0 { TimersMisuse.negativeTolerance(self) }
        return UInt64(nanoseconds)
    }
}
