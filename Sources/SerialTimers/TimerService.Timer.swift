import SerialCore

extension TimerService {
    /// One timer: the record the wheel keeps while it waits and the object a `TimerHandle`
    /// points at, so a one-shot timer costs one allocation. It holds no reference to the
    /// service, so a pending timer does not keep a released service alive.
    final class Timer: @unchecked Sendable {  // every `var`: under the core's lock
        /// Taken (set to `nil`) by whoever moves the timer out of `.pending`.
        var callback: (@Sendable () -> Void)?
        /// The deadline of the next (or last) firing.
        var deadline: MonotonicInstant
        /// Where the timer sits in the wheel while it waits.
        var slot = TimingWheel<Timer>.Handle(index: -1, generation: 0)
        var status = TimerStatus.pending
        /// Set for `schedule(every:)` timers only, so one-shot timers do not pay for it.
        var repeating: Repeating?

        init(deadline: MonotonicInstant, callback: @escaping @Sendable () -> Void) {
            self.deadline = deadline
            self.callback = callback
        }
    }

    /// A repeating timer's schedule: fixed rate, every deadline computed from the first one
    /// (`first + index × period`), so rounding never accumulates into drift.
    final class Repeating {  // under the core's lock
        let periodNanoseconds: UInt64
        var first: MonotonicInstant
        /// Which period `Timer.deadline` is: `first + index × period`.
        var index: UInt64 = 0
        var fired = 0
        var skipped = 0

        init(periodNanoseconds: UInt64, first: MonotonicInstant) {
            self.periodNanoseconds = periodNanoseconds
            self.first = first
        }

        /// The deadline of period `index`, saturating at `distantFuture`.
        func deadline(ofPeriod index: UInt64) -> MonotonicInstant {
            let (offset, overflow) = index.multipliedReportingOverflow(by: self.periodNanoseconds)
            let (sum, overflow2) = self.first.nanoseconds.addingReportingOverflow(offset)
            return overflow || overflow2 ? .distantFuture : MonotonicInstant(nanoseconds: sum)
        }

        /// Moves to the first period after `now`; the periods jumped over are counted as
        /// skipped, never run in a burst.
        func advance(past now: MonotonicInstant) -> MonotonicInstant {
            var next = self.index &+ 1
            if now >= self.first {
                let late = (now.nanoseconds - self.first.nanoseconds) / self.periodNanoseconds &+ 1
                next = max(next, late)
            }
            self.skipped += Int(clamping: next - self.index - 1)
            self.index = next
            return self.deadline(ofPeriod: next)
        }
    }
}
