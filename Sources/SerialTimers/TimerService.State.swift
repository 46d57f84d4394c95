import SerialCore

extension TimerService {
    /// Why the service stopped for good.
    enum StopReason: Equatable {
        case stopped
        case schedulerShutDown(SchedulingError)

        var status: TimerStatus {
            switch self {
            case .stopped: return .stopped
            case .schedulerShutDown(let error): return .schedulerShutDown(error)
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
        var batch: [@Sendable () -> Void] = []
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
        var wheel: TimingWheel<Timer>
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

        init(clock: TickClock) {
            self.clock = clock
            self.wheel = TimingWheel()
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
            timer.slot = self.wheel.insert(timer, at: WheelTick(self.clock.tickAtOrAfter(timer.deadline)))
            self.accepted += 1
            return self.armIfEarlier()
        }

        /// Moves a waiting timer to `deadline` in place; says which deadline it fires at.
        mutating func reschedule(
            _ timer: Timer, to deadline: MonotonicInstant, nowTick: UInt64
        ) -> (TimerReschedule, Arm?) {
            guard self.wheel.contains(timer.slot) else {
                switch timer.status {
                case .pending, .fired: return (.firedAtOldDeadline, nil)  // due and committed, or run
                case let ended: return (.ended(ended), nil)
                }
            }
            self.catchUp(to: nowTick)
            timer.deadline = deadline
            if let repeating = timer.repeating {
                repeating.first = deadline  // the schedule restarts from the new deadline
                repeating.index = 0
            }
            self.wheel.reschedule(timer.slot, to: WheelTick(self.clock.tickAtOrAfter(deadline)))
            return (.movedToNewDeadline, self.armIfEarlier())
        }

        /// Brings an idle wheel up to now (free: nothing is due before the next slot), so an
        /// entry lands in the level its real distance calls for, not a stale one.
        private mutating func catchUp(to nowTick: UInt64) {
            if self.wheel.nextExpiry.map({ $0.rawValue > nowTick }) ?? true {
                self.wheel.advance(to: WheelTick(nowTick), into: &self.backlog)
            }
        }

        /// Asks for a wake-up at the wheel's next slot when nothing is armed or the armed
        /// wake-up is later; the caller arms it and stores it with `armed(_:)`.
        mutating func armIfEarlier() -> Arm? {
            guard let next = self.wheel.nextExpiry?.rawValue else { return nil }
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
            self.wheel.advance(to: WheelTick(nowTick), into: &self.backlog)
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
            let currentTick = self.wheel.currentTick.rawValue
            let now = self.clock.instant(ofTick: currentTick)
            for timer in self.backlog[self.backlogHead..<end] where timer.status == .pending {
                guard let repeating = timer.repeating else {
                    timer.status = .fired
                    self.fired += 1
                    if currentTick > self.clock.tickAtOrAfter(timer.deadline) { self.late += 1 }
                    turn.batch.append(timer.callback!)
                    timer.callback = nil
                    continue
                }
                // Back in the wheel before its callback runs, so a cancel from inside the
                // callback stops it; missed periods are skipped and counted, never burst.
                turn.batch.append(timer.callback!)
                repeating.fired += 1
                timer.deadline = repeating.advance(past: now)
                timer.slot = self.wheel.insert(timer, at: WheelTick(self.clock.tickAtOrAfter(timer.deadline)))
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
        mutating func cancel(_ timer: Timer) -> (@Sendable () -> Void)? {
            if self.wheel.cancel(timer.slot) == nil {
                // A due one-shot timer is committed; a due repeating one is stopped here and
                // skipped when its turn comes.
                guard timer.repeating != nil, timer.status == .pending else { return nil }
            }
            timer.status = .cancelled
            self.cancelled += 1
            defer { timer.callback = nil }
            self.shrinkIfIdle()
            return timer.callback
        }

        /// Gives the node storage back once the wheel has emptied (after a mass cancel), with
        /// hysteresis: small wheels keep theirs, so a steady trickle never reallocates.
        mutating func shrinkIfIdle() {
            if self.wheel.isEmpty && self.wheel.nodeCapacity > 4096 { self.wheel.releaseStorage() }
        }

        /// Stops for good: every timer not yet handed to a turn ends with `reason`'s status;
        /// their callbacks are returned, to be released outside the lock.
        mutating func stop(_ reason: StopReason) -> (removed: [@Sendable () -> Void], armed: DelayedWork?) {
            guard self.stopReason == nil else { return ([], nil) }
            self.stopReason = reason
            var timers = self.wheel.removeAll()
            timers.append(contentsOf: self.backlog[self.backlogHead...])
            var removed: [@Sendable () -> Void] = []
            removed.reserveCapacity(timers.count)
            let status = reason.status
            for timer in timers where timer.status == .pending {
                timer.status = status
                if case .stopped = reason { self.stopped += 1 } else { self.shutDown += 1 }
                removed.append(timer.callback!)
                timer.callback = nil
            }
            self.wheel.releaseStorage()
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
