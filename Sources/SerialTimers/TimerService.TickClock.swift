import SerialCore

extension TimerService {
    /// The service's tick arithmetic: instants to wheel ticks and back, saturating at both ends.
    struct TickClock {
        /// Tick 0: the scheduler's time when the service was created.
        let origin: MonotonicInstant
        let tickNanoseconds: UInt64

        /// The first tick at or after `instant`: rounding deadlines up is what makes timers never early.
        func tickAtOrAfter(_ instant: MonotonicInstant) -> UInt64 {
            guard instant > self.origin else { return 0 }
            let delta = instant.nanoseconds - self.origin.nanoseconds
            let (quotient, remainder) = delta.quotientAndRemainder(dividingBy: self.tickNanoseconds)
            return remainder == 0 ? quotient : quotient + 1
        }

        /// The last tick at or before `instant`: the wheel only advances over ticks that have begun.
        func tickAtOrBefore(_ instant: MonotonicInstant) -> UInt64 {
            guard instant > self.origin else { return 0 }
            return (instant.nanoseconds - self.origin.nanoseconds) / self.tickNanoseconds
        }

        /// When `tick` begins, saturating at `distantFuture`.
        func instant(ofTick tick: UInt64) -> MonotonicInstant {
            let (offset, overflow) = tick.multipliedReportingOverflow(by: self.tickNanoseconds)
            let (sum, overflow2) = self.origin.nanoseconds.addingReportingOverflow(offset)
            return overflow || overflow2 ? .distantFuture : MonotonicInstant(nanoseconds: sum)
        }
    }
}
