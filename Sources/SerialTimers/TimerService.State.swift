import SerialCore

extension TimerService {
    /// Why the service stopped for good.
    enum StopReason: Equatable {
        case stopped
        case schedulerShutDown(SchedulingError)

        var stage: Stage {
            switch self {
            case .stopped: return .stopped
            case .schedulerShutDown: return .schedulerShutDown
            }
        }

        var error: TimerServiceError {
            switch self {
            case .stopped: return .stopped
            case .schedulerShutDown(let error): return .schedulerShutDown(error)
            }
        }
    }
    /// A wake-up to arm, decided and done in the same lock trip.
    struct Arm {
        let tick: UInt64
        let generation: UInt64
    }

    /// What a scheduler turn does after the lock: callbacks to run, follow-up to post.
    struct Turn {
        var batch: [Firing] = []
        var postFollowUp = false
    }

    /// Everything the service's mutex guards. A plain struct: each operation returns what the
    /// owner must do (scheduler calls aside, see `Core`) once the lock is released.
    ///
    /// - Invariant: while the wheel is non-empty, a wake-up is armed (`armedTick != nil`) at
    ///   or before `wheel.nextExpiry`; `armGeneration` identifies it, and a wake-up carrying
    ///   another generation is stale and does nothing. `backlog[backlogHead...]` holds due
    ///   timers not yet run, oldest first, and a follow-up turn is posted while it is non-empty.
    struct State {
        let wheel: Wheel
        let clock: TickClock
        var backlog: [Timer] = []
        var backlogHead = 0
        var armedTick: UInt64? = nil
        var armedWork: DelayedWork? = nil
        var armGeneration: UInt64 = 0
        var followUpPosted = false
        var stopReason: StopReason? = nil
        /// Delayed wake-ups that ran, stale ones included (observability for tests and benchmarks).
        var wakeUps = 0
        /// Counters for `serviceStatistics`, each bumped where its event is decided.
        var accepted = 0
        var fired = 0
        var cancelled = 0
        var stopped = 0
        var shutDown = 0
        var late = 0

        /// Timers ended by `cancel` or `stop` since memory was last given back, and the most
        /// pending since then: the hysteresis of `trimAfterMassEnd`.
        var endedSinceTrim = 0
        var peakSinceTrim = 0

        init(clock: TickClock) {
            self.clock = clock
            self.wheel = Wheel(clock: clock)
        }

        var isStopped: Bool { self.stopReason != nil }

        var pendingCount: Int { self.wheel.count + self.backlog.count - self.backlogHead }

        /// Adds a timer; asks for a wake-up only when its slot comes before the armed one.
        mutating func schedule(
            _ timer: Timer, nowTick: UInt64, maximumPending: Int
        ) throws(TimerServiceError) -> Arm? {
            if let reason = self.stopReason { throw reason.error }
            if self.pendingCount >= maximumPending { throw .tooManyPending(limit: maximumPending) }
            self.catchUp(to: nowTick)
            self.wheel.insert(timer)
            self.accepted += 1
            self.peakSinceTrim = max(self.peakSinceTrim, self.wheel.count)
            return self.armIfEarlier()
        }

        /// Moves a waiting timer to `deadline` in place; says which deadline it fires at.
        mutating func reschedule(
            _ timer: Timer, to deadline: MonotonicInstant, nowTick: UInt64
        ) -> (TimerReschedule, Arm?) {
            guard timer.isInWheel else {
                switch self.status(of: timer) {
                case .pending, .fired: return (.firedAtOldDeadline, nil)  // due and committed, or run
                case let ended: return (.ended(ended), nil)
                }
            }
            self.catchUp(to: nowTick)
            (timer as? RepeatingTimer)?.restart(at: deadline)  // the schedule restarts from the new deadline
            self.wheel.reschedule(timer, to: deadline)
            return (.movedToNewDeadline, self.armIfEarlier())
        }

        /// Re-arms a one-shot timer from inside its own callback (fixed delay): it is pending
        /// again, with the callback that is running, due at `deadline`. Too late once the
        /// service stopped (the timer did fire, at its old deadline).
        mutating func rearmFired(
            _ timer: Timer, callback: Callback, to deadline: MonotonicInstant, nowTick: UInt64
        ) -> (TimerReschedule, Arm?) {
            guard case .fired = timer.stage, !timer.isInWheel, self.stopReason == nil else {
                return (.firedAtOldDeadline, nil)
            }
            timer.stage = .pending(callback.body)
            timer.deadline = deadline
            self.fired -= 1  // pending again: it is counted once more when it ends for good
            self.catchUp(to: nowTick)
            self.wheel.insert(timer)
            return (.movedToNewDeadline, self.armIfEarlier())
        }

        /// Brings an idle wheel up to now (free: nothing is due before the next slot), so an
        /// entry lands in the level its real distance calls for, not a stale one.
        private mutating func catchUp(to nowTick: UInt64) {
            if self.wheel.nextExpiry.map({ $0 > nowTick }) ?? true {
                self.wheel.advance(to: nowTick, into: &self.backlog)
            }
        }

        /// Asks for a wake-up at the wheel's next slot when nothing is armed or the armed
        /// wake-up is later; the caller arms it and stores it with `armed(_:)`.
        mutating func armIfEarlier() -> Arm? {
            guard let next = self.wheel.nextExpiry else { return nil }
            if let armed = self.armedTick, armed <= next { return nil }
            self.armedTick = next
            self.armGeneration &+= 1
            return Arm(tick: next, generation: self.armGeneration)
        }

        /// Keeps the wake-up just armed; returns the one it replaces, to cancel.
        mutating func armed(_ work: DelayedWork) -> DelayedWork? {
            defer { self.armedWork = work }
            return self.armedWork
        }

        /// The armed wake-up ran: expire what is due, take a batch, re-arm for what is left.
        mutating func wake(generation: UInt64, nowTick: UInt64, limit: Int) -> (Turn, Arm?)? {
            self.wakeUps += 1
            guard generation == self.armGeneration, self.armedTick != nil else { return nil }
            self.armedTick = nil
            self.armedWork = nil
            self.armGeneration &+= 1  // so a late wake-up of this generation is refused
            self.wheel.advance(to: nowTick, into: &self.backlog)
            var turn = Turn()
            self.takeBatch(limit: limit, into: &turn)  // re-inserts repeating timers first
            return (turn, self.armIfEarlier())
        }

        /// A follow-up turn: run the next batch of already-due callbacks.
        mutating func followUp(limit: Int) -> (Turn, Arm?) {
            self.followUpPosted = false
            var turn = Turn()
            self.takeBatch(limit: limit, into: &turn)
            return (turn, self.armIfEarlier())
        }

        private mutating func takeBatch(limit: Int, into turn: inout Turn) {
            let available = self.backlog.count - self.backlogHead
            guard available > 0 else { return }
            let end = self.backlogHead + min(limit, available)
            turn.batch.reserveCapacity(end - self.backlogHead)
            let currentTick = self.wheel.currentTick
            let now = self.clock.instant(ofTick: currentTick)
            for timer in self.backlog[self.backlogHead..<end] {
                guard let repeating = timer as? RepeatingTimer else {
                    guard let callback = timer.end(.fired) else { continue }  // cancelled while due
                    self.fired += 1
                    if currentTick > self.clock.tickAtOrAfter(timer.deadline) { self.late += 1 }
                    turn.batch.append(Firing(timer: timer, callback: callback))
                    continue
                }
                guard let callback = repeating.callback else { continue }
                // Back in the wheel before its callback runs, so a cancel from inside the
                // callback stops it; missed periods are skipped and counted, never burst.
                turn.batch.append(Firing(timer: repeating, callback: callback))
                repeating.fired += 1
                repeating.advance(past: now)
                self.wheel.insert(repeating)
            }
            self.backlogHead = end
            if end == self.backlog.count {
                self.backlog.removeAll(keepingCapacity: self.backlog.count <= 4096)  // shrinks after a burst
                self.backlogHead = 0
            } else if !self.followUpPosted {
                self.followUpPosted = true
                turn.postFollowUp = true
            }
        }

        /// Removes a waiting timer: its callback is returned, to be released outside the lock.
        mutating func cancel(_ timer: Timer) -> Callback? {
            // A due one-shot timer is committed; a due repeating one is stopped here and
            // skipped when its turn comes.
            guard self.wheel.remove(timer) || timer is RepeatingTimer else { return nil }
            guard let callback = timer.end(.cancelled) else { return nil }
            self.cancelled += 1
            self.endedSinceTrim += 1
            return callback
        }

        /// Whether the timers' memory should go back to the system now: after at least
        /// `trimThreshold` timers ended by `cancel` or `stop`, once the pending count has fallen
        /// below a quarter of its peak since the last time (hysteresis: a steady trickle of
        /// cancels never asks). Resets the count when it says yes.
        mutating func trimAfterMassEnd() -> Bool {
            guard self.endedSinceTrim >= State.trimThreshold, self.pendingCount < self.peakSinceTrim / 4 else { return false }
            self.endedSinceTrim = 0
            self.peakSinceTrim = self.pendingCount
            return true
        }

        static let trimThreshold = 65_536

        /// How `timer` stands, for its handle.
        func status(of timer: Timer) -> TimerStatus {
            switch timer.stage {
            case .pending, .anchor: return .pending
            case .fired: return .fired
            case .cancelled: return .cancelled
            case .stopped: return .stopped
            case .schedulerShutDown:
                guard case .schedulerShutDown(let error) = self.stopReason else { return .stopped }
                return .schedulerShutDown(error)
            }
        }

        /// Stops for good: every timer not yet handed to a turn ends with `reason`'s status;
        /// their callbacks are returned, to be released outside the lock.
        mutating func stop(_ reason: StopReason) -> (removed: [Callback], armed: DelayedWork?) {
            guard self.stopReason == nil else { return ([], nil) }
            self.stopReason = reason
            var removed: [Callback] = []
            removed.reserveCapacity(self.pendingCount)
            let stage = reason.stage
            let end = { (timer: Timer) in
                if let callback = timer.end(stage) { removed.append(callback) }
            }
            self.wheel.removeAll(end)
            self.backlog[self.backlogHead...].forEach(end)
            if case .stopped = reason { self.stopped += removed.count } else { self.shutDown += removed.count }
            self.endedSinceTrim += removed.count
            self.backlog = []
            self.backlogHead = 0
            let armed = self.armedWork
            self.armedTick = nil
            self.armedWork = nil
            self.armGeneration &+= 1
            return (removed, armed)
        }
    }
}
