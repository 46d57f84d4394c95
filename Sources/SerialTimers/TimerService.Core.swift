import SerialCore

extension TimerService {
    /// The working part of a `TimerService`: the locked state, arming and turns. See
    /// `TimerService` for the guarantees.
    ///
    /// **One lock trip.** A schedule, reschedule or wake-up decides and arms the wake-up in
    /// one acquisition of the service's lock: `scheduler.schedule` is called with the lock
    /// held. That nests the scheduler's lock inside ours, never the other way round (a
    /// scheduler never calls back into a service while holding its own lock), so it cannot
    /// deadlock. Callbacks, closures being released, and cancelled wake-ups all happen after
    /// the lock is released.
    final class Core: Sendable {
        let scheduler: any Scheduling
        let maximumPending: Int
        let callbacksPerTurn: Int
        let clock: TickClock
        let state: LockedValue<State>
        /// The `whenShutDown` registration, withdrawn when the service stops.
        let subscription = LockedValue<ShutdownSubscription?>(nil)
        /// The callback a turn is running, if any.
        let running = RunningFiring()

        init(scheduler: any Scheduling, tickNanoseconds: UInt64, maximumPending: Int, callbacksPerTurn: Int) {
            self.scheduler = scheduler
            self.maximumPending = maximumPending
            self.callbacksPerTurn = callbacksPerTurn
            self.clock = TickClock(origin: scheduler.now, tickNanoseconds: tickNanoseconds)
            self.state = LockedValue(State(clock: self.clock))
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
            var (removed, armed, wasLarge) = self.state.withLock { state in
                let (removed, armed) = state.stop(reason)
                return (removed, armed, state.accepted >= State.trimThreshold)
            }
            armed?.cancel()
            self.withdrawSubscription()
            let count = removed.count
            removed = []  // the callbacks are released here, outside the lock
            // A service that held many timers gives their memory back as it stops: those it
            // dropped now, and cancelled ones whose handles were let go since.
            if wasLarge { MallocTrim.returnFreeMemory() }
            return count
        }

        private func withdrawSubscription() {
            self.subscription.withLock { stored in
                defer { stored = nil }
                return stored
            }?.cancel()
        }

        /// What a lock trip leaves to do after the lock: a replaced wake-up to cancel, or the
        /// scheduler's refusal (the service stopped inside the trip; callbacks to release).
        struct Aftermath {
            var replaced: DelayedWork? = nil
            var refusal: SchedulingError? = nil
            var dropped: [Callback] = []

            func finish(_ core: Core) {
                self.replaced?.cancel()
                if self.refusal != nil { core.withdrawSubscription() }
            }
        }

        /// Arms `arm` while the lock is held; a refusal stops the service right there.
        private func arm(_ arm: Arm?, in state: inout State, _ aftermath: inout Aftermath) {
            guard let arm else { return }
            do {
                // Captures the core strongly: a stopped or released service cancels this wake-up.
                let work = try self.scheduler.schedule(at: arm.instant) {
                    self.wake(generation: arm.generation)
                }
                aftermath.replaced = state.armed(work)
            } catch {
                let (dropped, armed) = state.stop(.schedulerShutDown(error))
                aftermath.refusal = error
                aftermath.dropped = dropped
                aftermath.replaced = armed
            }
        }

        /// Adds `timer`; throws `.schedulerShutDown` when arming its wake-up found the
        /// scheduler gone (the timer, like every pending one, then ended `.schedulerShutDown`).
        func insert(_ timer: Timer, now: MonotonicInstant) throws(TimerServiceError) {
            let nowTick = self.clock.tickAtOrBefore(now)
            let maximum = self.maximumPending
            // The lock rethrows untyped errors: carry the typed one out in a Result.
            let result = self.state.withLock { state in
                Result { () throws(TimerServiceError) -> Aftermath in
                    var aftermath = Aftermath()
                    let arm = try state.schedule(timer, nowTick: nowTick, maximumPending: maximum)
                    self.arm(arm, in: &state, &aftermath)
                    return aftermath
                }
            }
            let aftermath = try result.get()
            aftermath.finish(self)
            if let refusal = aftermath.refusal { throw .schedulerShutDown(refusal) }
        }

        /// Moves `timer` to `deadline` in place, with a new tolerance (nanoseconds) unless
        /// `tolerance` is `nil` (one lock trip, no allocation).
        func reschedule(
            _ timer: Timer, to deadline: MonotonicInstant, tolerance: UInt64? = nil, now: MonotonicInstant
        ) -> TimerReschedule {
            let nowTick = self.clock.tickAtOrBefore(now)
            let outcome = self.rearmTrip(timer) { state in
                state.reschedule(timer, to: deadline, tolerance: tolerance, nowTick: nowTick)
            }
            // Fired: re-armed only from its own running callback (fixed delay).
            guard case .firedAtOldDeadline = outcome, let firing = self.runningFiring(of: timer) else {
                return outcome
            }
            return self.rearmTrip(timer) { state in
                state.rearmFired(firing, to: deadline, tolerance: tolerance, nowTick: nowTick)
            }
        }

        /// One lock trip that decides a re-arm of `timer` and arms the wake-up it asks for.
        private func rearmTrip(
            _ timer: Timer, _ decide: (inout State) -> (TimerReschedule, Arm?)
        ) -> TimerReschedule {
            var aftermath = Aftermath()
            let outcome = self.state.withLock { state in
                let (outcome, arm) = decide(&state)
                self.arm(arm, in: &state, &aftermath)
                return outcome
            }
            aftermath.finish(self)
            if aftermath.refusal != nil { return .ended(self.status(of: timer)) }
            return outcome
        }

        /// `timer`'s firing when the caller is its very callback (or code it calls), running in
        /// a turn of this service: the one case where a fired one-shot timer can be re-armed.
        private func runningFiring(of timer: Timer) -> Firing? {
            // `running` is touched only by this service's turns; `isCurrent` says we are in one.
            guard self.scheduler.isCurrent, let firing = self.running.current, firing.timer === timer else {
                return nil
            }
            return firing
        }

        func cancel(_ timer: Timer) -> Bool {
            let (callback, trim) = self.state.withLock { state in
                let callback = state.cancel(timer)
                return (callback, callback != nil && state.trimAfterMassEnd())
            }
            if trim { MallocTrim.returnFreeMemory() }  // after a mass cancel, outside the lock
            return callback != nil  // the callback is released here, outside the lock
        }

        private func wake(generation: UInt64) {
            let now = self.scheduler.now
            let nowTick = self.clock.tickAtOrBefore(now)
            let limit = self.callbacksPerTurn
            var aftermath = Aftermath()
            let turn: Turn? = self.state.withLock { state in
                let woken = state.wake(generation: generation, now: now, nowTick: nowTick, limit: limit)
                guard let (turn, arm) = woken else {
                    return nil  // a stale wake-up: superseded or stopped
                }
                self.arm(arm, in: &state, &aftermath)
                return turn
            }
            aftermath.finish(self)
            if let turn { self.run(turn) }
        }

        private func followUp() {
            let limit = self.callbacksPerTurn
            var aftermath = Aftermath()
            let turn = self.state.withLock { state in
                let (turn, arm) = state.followUp(limit: limit)
                self.arm(arm, in: &state, &aftermath)
                return turn
            }
            aftermath.finish(self)
            self.run(turn)
        }

        private func run(_ turn: Turn) {
            if turn.postFollowUp {
                do {
                    try self.scheduler.execute { self.followUp() }
                } catch {
                    self.stop(.schedulerShutDown(error))  // the due timers left end unrun, with the reason
                }
            }
            for firing in turn.batch {
                self.running.current = firing
                firing.callback.body()
            }
            self.running.current = nil
        }
    }
}

extension TimerService {
    /// The callback a turn of the service is running. Written and read only in the service's
    /// turns, one at a time on its scheduler (readers check `isCurrent` first): no lock.
    final class RunningFiring: @unchecked Sendable {
        var current: Firing?
    }
}

extension TimerService.Core {
    /// How `timer` stands, read under the core's lock.
    func status(of timer: TimerService.Timer) -> TimerStatus {
        self.state.withLock { $0.status(of: timer) }
    }
}
