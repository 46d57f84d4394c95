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
    /// What to do about the one delayed wake-up, decided under the lock, done after it.
    enum ArmAction {
        case none
        /// Schedule a wake-up for `tick` carrying `generation`, and cancel `replacing`.
        case arm(tick: UInt64, generation: UInt64, replacing: DelayedWork?)
    }

    /// What a scheduler turn does after the lock: callbacks to run, wake-up to arm, follow-up to post.
    struct Turn {
        var batch: [@Sendable () -> Void] = []
        var arm: ArmAction = .none
        var postFollowUp = false
    }

    /// Everything the service's mutex guards. A plain struct: each operation returns what the
    /// owner must do once the lock is released.
    ///
    /// - Invariant: while the wheel is non-empty, a wake-up is armed (`armedTick != nil`) at
    ///   or before `wheel.nextExpiry`; `armGeneration` identifies it, and a wake-up carrying
    ///   another generation is stale and does nothing. `backlog[backlogHead...]` holds due
    ///   callbacks not yet run, oldest first, and a follow-up turn is posted while it is non-empty.
    struct State {
        var wheel: TimingWheel<Timer>
        var backlog: [Timer] = []
        var backlogHead = 0
        var armedTick: UInt64? = nil
        var armedWork: DelayedWork? = nil
        var armGeneration: UInt64 = 0
        var followUpPosted = false
        var stopReason: StopReason? = nil
        /// Delayed wake-ups that ran, stale ones included (observability for tests and benchmarks).
        var wakeUps = 0

        var isStopped: Bool { self.stopReason != nil }

        var pendingCount: Int { self.wheel.count + self.backlog.count - self.backlogHead }

        /// Adds a timer; re-arms only when its slot comes before the armed wake-up.
        mutating func schedule(
            _ timer: Timer, deadlineTick: UInt64, nowTick: UInt64, maximumPending: Int
        ) throws(TimerServiceError) -> ArmAction {
            if let reason = self.stopReason { throw reason.error }
            if self.pendingCount >= maximumPending { throw .tooManyPending(limit: maximumPending) }
            // Bring an idle wheel up to now (free: nothing is due before the next slot), so the
            // new entry lands in the level its real distance calls for, not a stale one.
            if self.wheel.nextExpiry.map({ $0.rawValue > nowTick }) ?? true {
                self.wheel.advance(to: WheelTick(nowTick), into: &self.backlog)
            }
            timer.slot = self.wheel.insert(timer, at: WheelTick(deadlineTick))
            return self.armIfEarlier()
        }

        /// Arms for the wheel's next slot when nothing is armed or the armed wake-up is later.
        mutating func armIfEarlier() -> ArmAction {
            guard let next = self.wheel.nextExpiry?.rawValue else { return .none }
            if let armed = self.armedTick, armed <= next { return .none }
            self.armedTick = next
            self.armGeneration &+= 1
            let replacing = self.armedWork
            self.armedWork = nil
            return .arm(tick: next, generation: self.armGeneration, replacing: replacing)
        }

        /// Keeps the scheduled wake-up's handle if it is still the armed one; `false` means it
        /// was superseded (or already ran) and should be cancelled.
        mutating func store(_ work: DelayedWork, generation: UInt64) -> Bool {
            guard generation == self.armGeneration, self.armedTick != nil else { return false }
            self.armedWork = work
            return true
        }

        /// The armed wake-up ran: expire what is due, re-arm for what is left, take a batch.
        mutating func wake(generation: UInt64, nowTick: UInt64, limit: Int) -> Turn? {
            self.wakeUps += 1
            guard generation == self.armGeneration, self.armedTick != nil else { return nil }
            self.armedTick = nil
            self.armedWork = nil
            self.armGeneration &+= 1  // so a late `store` of this wake-up's handle is refused
            self.wheel.advance(to: WheelTick(nowTick), into: &self.backlog)
            var turn = Turn()
            turn.arm = self.armIfEarlier()
            self.takeBatch(limit: limit, into: &turn)
            return turn
        }

        /// A follow-up turn: run the next batch of already-due callbacks.
        mutating func followUp(limit: Int) -> Turn {
            self.followUpPosted = false
            var turn = Turn()
            self.takeBatch(limit: limit, into: &turn)
            return turn
        }

        private mutating func takeBatch(limit: Int, into turn: inout Turn) {
            let available = self.backlog.count - self.backlogHead
            guard available > 0 else { return }
            let end = self.backlogHead + min(limit, available)
            turn.batch.reserveCapacity(end - self.backlogHead)
            for timer in self.backlog[self.backlogHead..<end] {
                timer.status = .fired
                turn.batch.append(timer.callback!)
                timer.callback = nil
            }
            self.backlogHead = end
            if end == self.backlog.count {
                self.backlog.removeAll(keepingCapacity: true)
                self.backlogHead = 0
            } else if !self.followUpPosted {
                self.followUpPosted = true
                turn.postFollowUp = true
            }
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
            for timer in timers {
                timer.status = status
                removed.append(timer.callback!)
                timer.callback = nil
            }
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
