import SerialCore

extension TimerService {
    /// The working part of a `TimerService`: the locked state, the tick arithmetic, arming and
    /// turns. See `TimerService` for the guarantees.
    final class Core: Sendable {
        let scheduler: any Scheduling
        let tickNanoseconds: UInt64
        let maximumPending: Int
        let callbacksPerTurn: Int
        /// Tick 0: the scheduler's time when the service was created.
        let origin: MonotonicInstant
        let state: LockedValue<State>

        init(scheduler: any Scheduling, tickNanoseconds: UInt64, maximumPending: Int, callbacksPerTurn: Int) {
            self.scheduler = scheduler
            self.tickNanoseconds = tickNanoseconds
            self.maximumPending = maximumPending
            self.callbacksPerTurn = callbacksPerTurn
            self.origin = scheduler.now
            self.state = LockedValue(State(wheel: TimingWheel()))
        }

        @discardableResult
        func stop() -> Int {
            let (removed, armed) = self.state.withLock { $0.stop() }
            armed?.cancel()
            return removed.count  // the callbacks are released here, outside the lock
        }

        func insert(
            _ callback: Callback, deadline: MonotonicInstant, now: MonotonicInstant
        ) throws(TimerServiceError) -> TimingWheel<Callback>.Handle {
            let deadlineTick = self.tickAtOrAfter(deadline)
            let nowTick = self.tickAtOrBefore(now)
            let maximum = self.maximumPending
            // The lock rethrows untyped errors: carry the typed one out in a Result.
            let decision = self.state.withLock { state in
                Result { () throws(TimerServiceError) in
                    try state.schedule(callback, deadlineTick: deadlineTick, nowTick: nowTick, maximumPending: maximum)
                }
            }
            let (slot, action) = try decision.get()
            self.perform(action)
            return slot
        }

        func cancel(_ slot: TimingWheel<Callback>.Handle) -> Bool {
            let removed = self.state.withLock { state in state.wheel.cancel(slot) }
            return removed != nil  // the callback is released here, outside the lock
        }

        func isPending(_ slot: TimingWheel<Callback>.Handle) -> Bool {
            self.state.withLock { $0.wheel.contains(slot) }
        }

        private func perform(_ action: ArmAction) {
            guard case .arm(let tick, let generation, let replacing) = action else { return }
            replacing?.cancel()
            // Captures the core strongly: a stopped or released service cancels this wake-up.
            let work = try! self.scheduler.schedule(at: self.instant(ofTick: tick)) {
                self.wake(generation: generation)
            }
            if !self.state.withLock({ $0.store(work, generation: generation) }) {
                work.cancel()  // superseded by an earlier slot, a stop, or it already ran
            }
        }

        private func wake(generation: UInt64) {
            let nowTick = self.tickAtOrBefore(self.scheduler.now)
            let limit = self.callbacksPerTurn
            guard let turn = self.state.withLock({ $0.wake(generation: generation, nowTick: nowTick, limit: limit) }) else {
                return  // a stale wake-up: superseded or stopped
            }
            self.run(turn)
        }

        private func followUp() {
            let limit = self.callbacksPerTurn
            self.run(self.state.withLock { $0.followUp(limit: limit) })
        }

        private func run(_ turn: Turn) {
            self.perform(turn.arm)
            if turn.postFollowUp {
                try! self.scheduler.execute { self.followUp() }
            }
            for callback in turn.batch { callback.run() }
        }

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
