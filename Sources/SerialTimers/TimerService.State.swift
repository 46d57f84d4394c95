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
        let instant: MonotonicInstant
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
    /// - Invariant: while the wheel or the precise heap holds a timer, a wake-up is armed
    ///   (`armedAt != nil`) at or before the end of every waiting timer's window (the wheel's
    ///   `nextWakeTick`, the heap's earliest deadline); `armGeneration` identifies it, and a
    ///   wake-up carrying another generation is stale and does nothing.
    ///   `backlog[backlogHead...]` holds due timers not yet run, oldest first, and a follow-up
    ///   turn is posted while it is non-empty; `madePreciseDue` names only timers in it.
    struct State {
        let wheel: Wheel
        /// Timers with a tolerance under one tick, by exact deadline.
        var precise = PreciseHeap()
        let clock: TickClock
        var backlog: [Timer] = []
        var backlogHead = 0
        /// Precise timers expired by a wake-up, before they are merged into `backlog`.
        var expiredPrecise: [Timer] = []
        /// The default timers among the precise ones in `backlog` (made precise by a reschedule;
        /// a default timer has no field for it), until their turn takes them (`Firing.madePrecise`).
        var madePreciseDue: Set<ObjectIdentifier> = []
        /// The time of the last wake-up (what a repeating timer's next period is counted from).
        var lastWake = MonotonicInstant(nanoseconds: 0)
        var armedAt: MonotonicInstant? = nil
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

        var pendingCount: Int { self.wheel.count + self.precise.count + self.backlog.count - self.backlogHead }

        /// Adds a timer; asks for a wake-up only when its window ends before the armed one.
        mutating func schedule(
            _ timer: Timer, nowTick: UInt64, maximumPending: Int
        ) throws(TimerServiceError) -> Arm? {
            if let reason = self.stopReason { throw reason.error }
            if self.pendingCount >= maximumPending { throw .tooManyPending(limit: maximumPending) }
            self.catchUp(to: nowTick)
            self.accepted += 1
            let arm = self.file(timer, .init(tolerance: timer.tolerance(), tickNanoseconds: self.clock.tickNanoseconds))
            self.peakSinceTrim = max(self.peakSinceTrim, self.pendingCount)
            return arm
        }

        /// Files a timer that waits nowhere, as `filing` says; asks for an earlier wake-up if
        /// its window ends before the armed one.
        private mutating func file(_ timer: Timer, _ filing: Filing) -> Arm? {
            self.armIfEarlier(than: self.place(timer, filing))
        }

        /// Puts a timer that waits nowhere in the wheel or the precise heap; arms nothing.
        ///
        /// - Returns: When the service must wake for it at the latest.
        @discardableResult
        private mutating func place(_ timer: Timer, _ filing: Filing) -> MonotonicInstant {
            switch filing {
            case .wheel:
                return self.clock.instant(ofTick: self.wheel.insert(timer))
            case .precise:
                self.precise.insert(timer)
                return timer.deadline
            }
        }

        /// When the service must wake for a waiting `timer` at the latest.
        private func wakeInstant(of timer: Timer, _ filing: Filing) -> MonotonicInstant {
            filing == .precise ? timer.deadline : self.wakeInstant(ofWheelTimer: timer)
        }

        /// When the wheel must wake for `timer` at the latest: the last tick of its window.
        private func wakeInstant(ofWheelTimer timer: Timer) -> MonotonicInstant {
            let due = max(self.clock.tickAtOrAfter(timer.deadline), self.wheel.currentTick &+ 1)
            return self.clock.instant(ofTick: timer.latestTick(due: due, clock: self.clock))
        }

        /// Moves a waiting timer to `deadline` in place, with a new tolerance (nanoseconds) unless
        /// `tolerance` is `nil`; says which deadline it fires at.
        mutating func reschedule(
            _ timer: Timer, to deadline: MonotonicInstant, tolerance: UInt64?, nowTick: UInt64
        ) -> (TimerReschedule, Arm?) {
            guard timer.isWaiting else {
                switch self.status(of: timer) {
                case .pending, .fired: return (.firedAtOldDeadline, nil)  // due and committed, or run
                case let ended: return (.ended(ended), nil)
                }
            }
            self.catchUp(to: nowTick)
            (timer as? RepeatingTimer)?.restart(at: deadline)  // the schedule restarts from the new deadline
            let wasPrecise = self.precise.holds(timer)
            let (filing, stored) = self.refiling(timer, tolerance: tolerance, wasPrecise: wasPrecise)
            switch (wasPrecise, filing) {
            case (false, .wheel):
                // Not moved: its window ends no earlier, and the armed wake-up came before that.
                guard self.wheel.reschedule(timer, to: deadline, tolerance: stored) else {
                    return (.movedToNewDeadline, nil)
                }
            case (true, .precise):
                if let stored { (timer as! TolerantTimer).storedTolerance = stored }
                self.precise.move(timer, to: deadline)
            case (true, .wheel), (false, .precise):
                if wasPrecise { self.precise.remove(timer) } else { self.wheel.remove(timer) }
                timer.deadline = deadline
                if let stored { (timer as! TolerantTimer).storedTolerance = stored }
                return (.movedToNewDeadline, self.file(timer, filing))
            }
            return (.movedToNewDeadline, self.armIfEarlier(than: self.wakeInstant(of: timer, filing)))
        }

        /// Re-arms a one-shot timer from inside its own callback (fixed delay): it is pending
        /// again, with the callback that is running, due at `deadline`, with a new tolerance
        /// (nanoseconds) unless `tolerance` is `nil`, by the same rule as `reschedule`. Too late
        /// once the service stopped (the timer did fire, at its old deadline).
        mutating func rearmFired(
            _ firing: Firing, to deadline: MonotonicInstant, tolerance: UInt64?, nowTick: UInt64
        ) -> (TimerReschedule, Arm?) {
            let timer = firing.timer
            guard case .fired = timer.stage, !timer.isWaiting, self.stopReason == nil else {
                return (.firedAtOldDeadline, nil)
            }
            let wasPrecise = firing.madePrecise || self.filing(of: timer) == .precise
            let (filing, stored) = self.refiling(timer, tolerance: tolerance, wasPrecise: wasPrecise)
            timer.stage = .pending(firing.callback.body)
            timer.deadline = deadline
            if let stored { (timer as! TolerantTimer).storedTolerance = stored }
            self.fired -= 1  // pending again: it is counted once more when it ends for good
            self.catchUp(to: nowTick)
            return (.movedToNewDeadline, self.file(timer, filing))
        }

        /// A re-arm's tolerance rule, the same whether the timer waits or has just fired: a
        /// tolerance given sets it, `nil` keeps how the timer was filed (`wasPrecise`). Only a
        /// `TolerantTimer` stores a tolerance (`stored`); a default one given a tolerance is
        /// precise under a tick and keeps its one tick otherwise (inside any window of a tick
        /// or more).
        private func refiling(
            _ timer: Timer, tolerance: UInt64?, wasPrecise: Bool
        ) -> (filing: Filing, stored: UInt64?) {
            let stored = tolerance == nil || !(timer is TolerantTimer) ? nil : tolerance
            let filing = tolerance.map { Filing(tolerance: $0, tickNanoseconds: self.clock.tickNanoseconds) }
                ?? (wasPrecise ? .precise : .wheel)
            return (filing, stored)
        }

        /// Brings an idle wheel up to now (free: nothing is due before the next slot), so an
        /// entry lands in the level its real distance calls for, not a stale one.
        private mutating func catchUp(to nowTick: UInt64) {
            if self.wheel.nextExpiry.map({ $0 > nowTick }) ?? true {
                self.wheel.advance(to: nowTick, into: &self.backlog)
            }
        }

        /// How a timer of its own tolerance is filed (a default one: the wheel).
        private func filing(of timer: Timer) -> Filing {
            Filing(tolerance: timer.tolerance(), tickNanoseconds: self.clock.tickNanoseconds)
        }

        /// Asks for a wake-up at `instant` when nothing is armed or the armed wake-up is later;
        /// the caller arms it and stores it with `armed(_:)`.
        private mutating func armIfEarlier(than instant: MonotonicInstant) -> Arm? {
            if let armed = self.armedAt, armed <= instant { return nil }
            self.armedAt = instant
            self.armGeneration &+= 1
            return Arm(instant: instant, generation: self.armGeneration)
        }

        /// Asks for a wake-up for the earliest window end among waiting timers, if it comes
        /// before the armed one (or nothing is armed).
        mutating func armForNext() -> Arm? {
            var next = self.precise.earliestDeadline() ?? .distantFuture
            if let tick = self.wheel.nextWakeTick { next = min(next, self.clock.instant(ofTick: tick)) }
            guard next != .distantFuture || !self.wheel.isEmpty || self.precise.count > 0 else { return nil }
            return self.armIfEarlier(than: next)
        }

        /// Keeps the wake-up just armed; returns the one it replaces, to cancel.
        mutating func armed(_ work: DelayedWork) -> DelayedWork? {
            defer { self.armedWork = work }
            return self.armedWork
        }

        /// The armed wake-up ran: expire what is due, take a batch, re-arm for what is left.
        mutating func wake(generation: UInt64, now: MonotonicInstant, nowTick: UInt64, limit: Int) -> (Turn, Arm?)? {
            self.wakeUps += 1
            guard generation == self.armGeneration, self.armedAt != nil else { return nil }
            self.armedAt = nil
            self.armedWork = nil
            self.armGeneration &+= 1  // so a late wake-up of this generation is refused
            self.lastWake = max(self.lastWake, now)
            let mark = self.backlog.count
            self.wheel.advance(to: nowTick, into: &self.backlog)
            self.precise.expire(upTo: now, into: &self.expiredPrecise)
            if !self.expiredPrecise.isEmpty {
                for timer in self.expiredPrecise where !(timer is TolerantTimer) {
                    self.madePreciseDue.insert(ObjectIdentifier(timer))
                }
                self.mergePrecise(after: mark)
            }
            var turn = Turn()
            self.takeBatch(limit: limit, into: &turn)  // re-files repeating timers first
            return (turn, self.armForNext())
        }

        /// Merges `expiredPrecise` into what the wheel just expired (`backlog[mark...]`), so the
        /// turn runs them in deadline order (a wheel timer counts at the tick it was due).
        private mutating func mergePrecise(after mark: Int) {
            defer { self.expiredPrecise.removeAll(keepingCapacity: true) }
            guard mark < self.backlog.count else {
                self.backlog.append(contentsOf: self.expiredPrecise)
                return
            }
            let fromWheel = Array(self.backlog[mark...])
            self.backlog.removeSubrange(mark...)
            var wheelIndex = 0
            let clock = self.clock
            let key = { (timer: Timer) in clock.instant(ofTick: clock.tickAtOrAfter(timer.deadline)) }
            for timer in self.expiredPrecise {
                while wheelIndex < fromWheel.count, key(fromWheel[wheelIndex]) <= timer.deadline {
                    self.backlog.append(fromWheel[wheelIndex])
                    wheelIndex += 1
                }
                self.backlog.append(timer)
            }
            self.backlog.append(contentsOf: fromWheel[wheelIndex...])
        }

        /// A follow-up turn: run the next batch of already-due callbacks.
        mutating func followUp(limit: Int) -> (Turn, Arm?) {
            self.followUpPosted = false
            var turn = Turn()
            self.takeBatch(limit: limit, into: &turn)
            return (turn, self.armForNext())
        }

        private mutating func takeBatch(limit: Int, into turn: inout Turn) {
            let available = self.backlog.count - self.backlogHead
            guard available > 0 else { return }
            let end = self.backlogHead + min(limit, available)
            turn.batch.reserveCapacity(end - self.backlogHead)
            let currentTick = self.wheel.currentTick
            let now = max(self.clock.instant(ofTick: currentTick), self.lastWake)
            for timer in self.backlog[self.backlogHead..<end] {
                guard let repeating = timer as? RepeatingTimer else {
                    let madePrecise =
                        !self.madePreciseDue.isEmpty && self.madePreciseDue.remove(ObjectIdentifier(timer)) != nil
                    guard let callback = timer.end(.fired) else { continue }  // cancelled while due
                    self.fired += 1
                    if currentTick > self.lastTickOfWindow(timer) { self.late += 1 }
                    turn.batch.append(Firing(timer: timer, callback: callback, madePrecise: madePrecise))
                    continue
                }
                guard let callback = repeating.callback else { continue }
                // Back in the wheel before its callback runs, so a cancel from inside the
                // callback stops it; missed periods are skipped and counted, never burst.
                turn.batch.append(Firing(timer: repeating, callback: callback))
                repeating.fired += 1
                repeating.advance(past: now)
                self.place(repeating, self.filing(of: repeating))  // the wake-up is decided after the batch
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

        /// The tick a timer's window ends in, for `late`: its latest tick in the wheel; the tick
        /// its deadline rounds up to for a precise one.
        private func lastTickOfWindow(_ timer: Timer) -> UInt64 {
            let due = self.clock.tickAtOrAfter(timer.deadline)
            return self.filing(of: timer) == .precise ? due : timer.latestTick(due: due, clock: self.clock)
        }

        /// Removes a waiting timer: its callback is returned, to be released outside the lock.
        mutating func cancel(_ timer: Timer) -> Callback? {
            // A due one-shot timer is committed; a due repeating one is stopped here and
            // skipped when its turn comes.
            guard self.precise.remove(timer) || self.wheel.remove(timer) || timer is RepeatingTimer else { return nil }
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
            self.precise.removeAll(end)
            self.backlog[self.backlogHead...].forEach(end)
            if case .stopped = reason { self.stopped += removed.count } else { self.shutDown += removed.count }
            self.endedSinceTrim += removed.count
            self.backlog = []
            self.backlogHead = 0
            self.madePreciseDue = []
            let armed = self.armedWork
            self.armedAt = nil
            self.armedWork = nil
            self.armGeneration &+= 1
            return (removed, armed)
        }
    }
}
