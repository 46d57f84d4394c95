import SerialCore

extension TimerService {
    /// One timer: the object a `TimerHandle` points at and, while it waits, its own node in the
    /// service's `Wheel`. A pending one-shot timer is this one allocation of 56 bytes (a
    /// 64-byte malloc chunk): 16 of object header, 16 for `stage`, 8 for the deadline, 16 for
    /// the links. It holds no reference to the service, so a pending timer does not keep a
    /// released service alive.
    ///
    /// Not `final`: a repeating timer is a `RepeatingTimer`, so one-shot timers do not carry
    /// a repeating schedule's fields.
    class Timer: @unchecked Sendable {  // every `var`: under the core's lock
        /// The callback while the timer is pending, then how it ended: one field for both, so
        /// the status costs no byte (the cases without payload live in the closure's spare
        /// values).
        final var stage: Stage
        /// The deadline of the next (or last) firing, exactly as asked (the wheel rounds it up
        /// to a tick when it files the timer).
        final var deadline: MonotonicInstant
        /// Neighbours in the wheel's slot list, both `nil` while the timer is not in the wheel.
        /// Unmanaged: the wheel owns one retain of each timer it holds (see `Wheel`).
        final var next: Unmanaged<Timer>?
        final var previous: Unmanaged<Timer>?

        init(deadline: MonotonicInstant, stage: Stage) {
            self.deadline = deadline
            self.stage = stage
        }

        /// Whether the timer waits in the wheel or the precise heap (not yet due, or due and not
        /// yet expired). A timer in the precise heap has `next` set to the heap's marker.
        final var isWaiting: Bool { self.next != nil }

        /// The last tick the wheel may expire this timer at, given `due`, the tick it is filed
        /// at: `due` itself for the default tolerance of one tick (see `TolerantTimer`).
        func latestTick(due: UInt64, clock: TickClock) -> UInt64 { due }

        /// The tolerance asked for, in nanoseconds, or `nil` for the default (one tick).
        func tolerance() -> UInt64? { nil }

        /// The callback, if the timer is still pending.
        final var callback: Callback? {
            if case .pending(let body) = self.stage { return Callback(body: body) }
            return nil
        }

        /// Ends the timer with `stage` and hands back its callback, to be run or released
        /// outside the lock; `nil` when it had already ended.
        final func end(_ stage: Stage) -> Callback? {
            guard case .pending(let body) = self.stage else { return nil }
            self.stage = stage
            return Callback(body: body)
        }
    }

    /// Where a timer stands. The terminal cases carry nothing: `.schedulerShutDown`'s reason
    /// is the service's (`State.stopReason`), the same for every timer it ended.
    enum Stage {
        case pending(@Sendable () -> Void)
        case fired
        case cancelled
        case stopped
        case schedulerShutDown
        /// Not a timer: the anchor of one of the wheel's slot lists.
        case anchor
    }

    /// A callback taken from a timer under the lock, to run or release after it. A struct so
    /// that arrays and generic results hold it as it is: a bare closure stored there is wrapped
    /// in a re-abstraction thunk, one allocation per timer.
    struct Callback {
        let body: @Sendable () -> Void
    }

    /// A callback handed to a scheduler turn, with its timer: while it runs, the turn names it
    /// (`Core.running`), so a callback that re-arms its own one-shot timer (fixed delay) is
    /// told apart from a re-arm that races the firing.
    struct Firing {
        let timer: Timer
        let callback: Callback
        /// A default timer made precise by a reschedule (it has no field to remember that):
        /// a re-arm from its callback keeps it precise, as a re-arm while pending would.
        var madePrecise = false
    }

    /// A `schedule(every:)` timer: fixed rate, every deadline computed from the first one
    /// (`first + index × period`), so rounding never accumulates into drift.
    final class RepeatingTimer: TolerantTimer, @unchecked Sendable {  // under the core's lock
        let periodNanoseconds: UInt64
        var first: MonotonicInstant
        /// Which period `deadline` is: `first + index × period`.
        var index: UInt64 = 0
        var fired = 0
        var skipped = 0

        init(
            periodNanoseconds: UInt64, first: MonotonicInstant, tolerance: UInt64?,
            callback: @escaping @Sendable () -> Void
        ) {
            self.periodNanoseconds = periodNanoseconds
            self.first = first
            super.init(deadline: first, tolerance: tolerance, stage: .pending(callback))
        }

        /// Restarts the schedule from `deadline` (a reschedule; the wheel sets `deadline`).
        func restart(at deadline: MonotonicInstant) {
            self.first = deadline
            self.index = 0
        }

        /// The deadline of period `index`, saturating at `distantFuture`.
        func deadline(ofPeriod index: UInt64) -> MonotonicInstant {
            let (offset, overflow) = index.multipliedReportingOverflow(by: self.periodNanoseconds)
            let (sum, overflow2) = self.first.nanoseconds.addingReportingOverflow(offset)
            return overflow || overflow2 ? .distantFuture : MonotonicInstant(nanoseconds: sum)
        }

        /// Moves to the first period after `now`; the periods jumped over are counted as
        /// skipped, never run in a burst.
        func advance(past now: MonotonicInstant) {
            var next = self.index &+ 1
            if now >= self.first {
                let late = (now.nanoseconds - self.first.nanoseconds) / self.periodNanoseconds &+ 1
                next = max(next, late)
            }
            self.skipped += Int(clamping: next - self.index - 1)
            self.index = next
            self.deadline = self.deadline(ofPeriod: next)
        }
    }

    /// The anchor of one slot list of the `Wheel`: the list runs from it and back to it, so
    /// an empty slot is an anchor linked to itself.
    final class Anchor: Timer, @unchecked Sendable {
        /// `level * 64 + slot`.
        let flat: Int

        init(flat: Int) {
            self.flat = flat
            super.init(deadline: .distantFuture, stage: .anchor)
            let me = Unmanaged.passUnretained(self as Timer)
            self.next = me
            self.previous = me
        }
    }
}
