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
        /// The `whenShutDown` registration, withdrawn when the service stops.
        let subscription = LockedValue<ShutdownSubscription?>(nil)

        init(scheduler: any Scheduling, tickNanoseconds: UInt64, maximumPending: Int, callbacksPerTurn: Int) {
            self.scheduler = scheduler
            self.tickNanoseconds = tickNanoseconds
            self.maximumPending = maximumPending
            self.callbacksPerTurn = callbacksPerTurn
            self.origin = scheduler.now
            self.state = LockedValue(State(wheel: TimingWheel()))
            // Holds the core until withdrawn by `stop` (or until it runs): a dead service
            // leaves no handler on a long-lived scheduler.
            let subscription = scheduler.whenShutDown { error in self.stop(.schedulerShutDown(error)) }
            let withdrawNow = self.subscription.withLock { stored in
                if self.state.withLock({ $0.isStopped }) { return true }
                stored = subscription
                return false
            }
            if withdrawNow { subscription.cancel() }
        }

        /// Stops for good with `reason`: pending timers end with its status, unrun.
        @discardableResult
        func stop(_ reason: StopReason = .stopped) -> Int {
            let (removed, armed) = self.state.withLock { $0.stop(reason) }
            armed?.cancel()
            self.subscription.withLock { stored in
                defer { stored = nil }
                return stored
            }?.cancel()
            return removed.count  // the callbacks are released here, outside the lock
        }

        /// Adds `timer`; throws `.schedulerShutDown` when arming its wake-up found the
        /// scheduler gone (the timer, like every pending one, then ended `.schedulerShutDown`).
        func insert(
            _ timer: Timer, deadline: MonotonicInstant, now: MonotonicInstant
        ) throws(TimerServiceError) {
            let deadlineTick = self.tickAtOrAfter(deadline)
            let nowTick = self.tickAtOrBefore(now)
            let maximum = self.maximumPending
            // The lock rethrows untyped errors: carry the typed one out in a Result.
            let decision = self.state.withLock { state in
                Result { () throws(TimerServiceError) in
                    try state.schedule(timer, deadlineTick: deadlineTick, nowTick: nowTick, maximumPending: maximum)
                }
            }
            if let refusal = self.perform(try decision.get()) { throw .schedulerShutDown(refusal) }
        }

        func cancel(_ timer: Timer) -> Bool {
            let callback: (@Sendable () -> Void)? = self.state.withLock { state in
                guard state.wheel.cancel(timer.slot) != nil else { return nil }
                timer.status = .cancelled
                defer { timer.callback = nil }
                return timer.callback
            }
            return callback != nil  // the callback is released here, outside the lock
        }

        /// Arms the wake-up `action` asks for. A refusal means the scheduler is gone: the
        /// service stops with `.schedulerShutDown` right here and the error is returned.
        private func perform(_ action: ArmAction) -> SchedulingError? {
            guard case .arm(let tick, let generation, let replacing) = action else { return nil }
            replacing?.cancel()
            let work: DelayedWork
            do {
                // Captures the core strongly: a stopped or released service cancels this wake-up.
                work = try self.scheduler.schedule(at: self.instant(ofTick: tick)) {
                    self.wake(generation: generation)
                }
            } catch {
                self.stop(.schedulerShutDown(error))
                return error
            }
            if !self.state.withLock({ $0.store(work, generation: generation) }) {
                work.cancel()  // superseded by an earlier slot, a stop, or it already ran
            }
            return nil
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
            _ = self.perform(turn.arm)
            if turn.postFollowUp {
                do {
                    try self.scheduler.execute { self.followUp() }
                } catch {
                    self.stop(.schedulerShutDown(error))  // the due timers left end unrun, with the reason
                }
            }
            for callback in turn.batch { callback() }
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
