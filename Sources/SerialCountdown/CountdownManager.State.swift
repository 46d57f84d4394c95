import SerialCore

extension CountdownManager {
    /// Where the shared ticker stands.
    ///
    /// `armed(n)`: exactly one tick work with sequence number `n` is scheduled (its handle may not
    /// be stored yet). `ticking(n)`: tick `n` runs; it arms the next one when it ends, if
    /// countdowns remain. `idle`: no countdown, no scheduled work. A tick or a handle whose number
    /// is not the current one is stale and does nothing.
    enum TickerPhase: Equatable {
        case idle
        case armed(UInt64)
        case ticking(UInt64)
    }

    /// What the owner must do after unlocking: schedule tick `sequence` at `deadline`; when
    /// `startsRun`, first subscribe to the scheduler's shutdown for this run of the ticker.
    struct ArmAction {
        let sequence: UInt64
        let deadline: MonotonicInstant
        let startsRun: Bool
    }

    /// What the owner must release after unlocking when the ticker goes idle: the armed work to
    /// cancel and the run's shutdown subscription to withdraw.
    struct TickerStop {
        let handle: DelayedWork?
        let subscription: ShutdownSubscription?

        func apply() {
            self.handle?.cancel()
            self.subscription?.cancel()
        }
    }

    /// What one tick collected under the lock.
    struct TickPlan {
        var missedTicks: Int
        var next: ArmDecision
    }

    /// The next tick's deadline, decided at the start of a tick from its clock reads.
    struct ArmDecision {
        let deadline: MonotonicInstant
    }

    /// The manager's table and ticker, guarded by the manager's mutex.
    ///
    /// - Invariant: `index[slots[i].key] == i` for every `i`; `index.count == slots.count`;
    ///   every slot's registration is live; `phase == .idle` exactly when the table is empty,
    ///   except while a tick runs (`ticking`), which settles it when it ends; once `shutDown` is
    ///   set the table stays empty and the ticker idle.
    struct State {
        /// Contiguous, so a tick walks them without chasing pointers. Order is not meaningful:
        /// removal moves the last slot into the hole.
        var slots: [Slot] = []
        var index: [ObjectIdentifier: Int] = [:]

        var phase: TickerPhase = .idle
        var armedHandle: DelayedWork? = nil
        var nextSequence: UInt64 = 1
        /// The sequence of the arm that started the ticker's current run (from idle).
        var runStart: UInt64 = 0
        /// The shutdown subscription: while countdowns or terminal calls are pending, the
        /// scheduler's shutdown handler keeps the manager alive and ends them; with neither, the
        /// manager holds none.
        var subscription: ShutdownSubscription? = nil
        /// Terminal calls handed to the scheduler and not yet made, by batch number: if the
        /// scheduler drops them (shut down with `.cancelPending`), the shutdown makes them.
        var pendingEndings: [UInt64: EndingBatch] = [:]
        var nextBatch: UInt64 = 0
        /// Set once the scheduler refused work or reported its shutdown: every countdown has
        /// ended with `.shutDown` and `register` is refused.
        var shutDown: SchedulingError? = nil
        /// Countdowns that ended because their receiver was released (they get no call).
        var releasedCount = 0
        /// Registrations accepted and countdowns ended by kind, for `serviceStatistics`: counted
        /// where a slot enters and where it leaves the table.
        var counts = Counts()

        /// The ticker's grid on the manager's clock: tick `k` falls due at
        /// `gridOrigin + k * interval`. Set when the ticker starts from idle.
        var gridOrigin: Int64 = 0
        /// The grid index the previous tick stood for.
        var lastTickIndex: Int64 = 0

        /// Reused by every tick, lent out of the lock while the handlers run.
        var batch: [Delivery] = []
        /// Reused by every tick: table positions to remove, in descending order.
        var removals: [Int] = []

        // MARK: Table

        /// Registers `registration` for `receiver`, replacing a live registration of the same
        /// receiver. A slot whose key matches but whose receiver is gone (a released receiver
        /// whose address was reused) is taken over as a new countdown.
        ///
        /// - Returns: What happened, the registration that left the table (to be released after
        ///   unlocking, since releasing it may run user deinitializers), and its deadline.
        mutating func insert(
            _ receiver: any CountdownReceiver, deadline: Int64, registration: Registration
        ) -> (CountdownRegistration, Registration?, Int64) {
            let key = ObjectIdentifier(receiver)
            self.counts.registered += 1
            if let position = self.index[key] {
                let previous = self.slots[position].registration
                let previousDeadline = self.slots[position].deadline
                previous.end()
                let outcome: CountdownRegistration = self.slots[position].receiver === receiver ? .replaced : .started
                if outcome == .started {
                    self.releasedCount += 1  // the slot of a released receiver, taken over
                    self.counts.receiverReleased += 1
                    self.slots[position] = Slot(receiver: receiver, deadline: deadline, registration: registration)
                } else {
                    self.counts.replaced += 1
                    self.slots[position].deadline = deadline
                    self.slots[position].registration = registration
                }
                self.checkInvariants()
                return (outcome, previous, previousDeadline)
            }
            self.index[key] = self.slots.count
            self.slots.append(Slot(receiver: receiver, deadline: deadline, registration: registration))
            self.checkInvariants()
            return (.started, nil, 0)
        }

        /// Removes the slot at `position` (O(1): the last slot moves into the hole) and ends its
        /// registration.
        ///
        /// - Returns: The removed slot's registration, to release after unlocking.
        mutating func removeSlot(at position: Int) -> Registration {
            let removed = self.slots[position]
            removed.registration.end()
            self.index[removed.key] = nil
            let last = self.slots.removeLast()
            if position < self.slots.count {
                self.slots[position] = last
                self.index[last.key] = position
            }
            return removed.registration
        }

        /// The position of `receiver`'s live countdown. A stale slot under the same key (its
        /// receiver released) is removed on the way, into `released`.
        mutating func position(of receiver: AnyObject, released: inout [Registration]) -> Int? {
            guard let position = self.index[ObjectIdentifier(receiver)] else { return nil }
            if self.slots[position].receiver === receiver { return position }
            released.append(self.removeSlot(at: position))
            self.releasedCount += 1
            self.counts.receiverReleased += 1
            return nil
        }

        // MARK: Ticker

        /// Starts the ticker if it is idle: the grid starts at `clockNow`, the first tick falls
        /// one interval later.
        mutating func startIfIdle(clockNow: Int64, schedulerNow: MonotonicInstant, interval: Int64) -> ArmAction? {
            guard self.phase == .idle else { return nil }
            self.gridOrigin = clockNow
            self.lastTickIndex = 0
            let action = self.arm(at: schedulerNow.advanced(by: .nanoseconds(interval)), startsRun: true)
            self.runStart = action.sequence
            return action
        }

        mutating func arm(at deadline: MonotonicInstant, startsRun: Bool = false) -> ArmAction {
            let sequence = self.nextSequence
            self.nextSequence &+= 1
            self.phase = .armed(sequence)
            self.armedHandle = nil
            return ArmAction(sequence: sequence, deadline: deadline, startsRun: startsRun)
        }

        /// Goes idle when the table is empty.
        ///
        /// - Returns: What to cancel after unlocking, if the ticker was running.
        mutating func stopIfEmpty() -> TickerStop? {
            guard self.slots.isEmpty, self.phase != .idle else { return nil }
            return self.goIdle()
        }

        /// Goes idle, handing back the armed work, and the subscription unless terminal calls
        /// are still pending on the scheduler.
        mutating func goIdle() -> TickerStop {
            self.phase = .idle
            defer { self.armedHandle = nil }
            return TickerStop(handle: self.armedHandle, subscription: self.releaseSubscriptionIfUnneeded())
        }

        /// The subscription to withdraw when nothing needs the scheduler's shutdown any more: the
        /// ticker idle, no countdown, no pending terminal call.
        mutating func releaseSubscriptionIfUnneeded() -> ShutdownSubscription? {
            guard self.phase == .idle, self.slots.isEmpty, self.pendingEndings.isEmpty else { return nil }
            defer { self.subscription = nil }
            return self.subscription
        }

        /// Records the shutdown subscription made for the run started by arm `run`.
        ///
        /// - Returns: `false` when it is not needed (that run is over and no terminal call is
        ///   pending, another subscription is held, or the scheduler is gone): the caller
        ///   withdraws it.
        mutating func store(_ subscription: ShutdownSubscription, forRun run: UInt64) -> Bool {
            guard self.shutDown == nil, self.subscription == nil,
                  (self.phase != .idle && self.runStart == run) || !self.pendingEndings.isEmpty
            else { return false }
            self.subscription = subscription
            return true
        }

        /// Ends every countdown with `end` (`.cancelled` or `.shutDown`): one terminal delivery per
        /// live receiver, released ones counted; the registrations are appended to `ended`, to be
        /// released after unlocking with the slots' last references. A shut-down manager gives the
        /// table's memory back (`keepingCapacity: false`): it takes no countdown again.
        mutating func endAll(
            _ end: CountdownEnd, now: Int64, into ended: inout [Registration], keepingCapacity: Bool
        ) -> [EndingDelivery] {
            var deliveries: [EndingDelivery] = []
            deliveries.reserveCapacity(self.slots.count)
            ended.reserveCapacity(self.slots.count)
            for slot in self.slots {
                slot.registration.end()
                ended.append(slot.registration)
                guard let receiver = slot.receiver else {
                    self.releasedCount += 1
                    self.counts.receiverReleased += 1
                    continue
                }
                if case .shutDown = end { self.counts.shutDown += 1 } else { self.counts.cancelled += 1 }
                deliveries.append(
                    EndingDelivery(
                        receiver: receiver, registration: slot.registration,
                        remaining: max(0, slot.deadline.saturatingSubtracting(now)), end: end))
            }
            self.slots.removeAll(keepingCapacity: keepingCapacity)
            self.index.removeAll(keepingCapacity: keepingCapacity)
            return deliveries
        }

        /// Keeps terminal calls that are about to be handed to the scheduler.
        mutating func addPendingEndings(_ deliveries: [EndingDelivery]) -> EndingBatch {
            self.nextBatch &+= 1
            let batch = EndingBatch(number: self.nextBatch, deliveries: deliveries)
            self.pendingEndings[batch.number] = batch
            return batch
        }

        /// Records the handle of armed work `sequence`.
        ///
        /// - Returns: `false` when that work is stale (the ticker stopped or moved on before the
        ///   handle arrived): the caller cancels it.
        mutating func store(_ handle: DelayedWork, for sequence: UInt64) -> Bool {
            guard self.phase == .armed(sequence) else { return false }
            self.armedHandle = handle
            return true
        }

        /// Begins tick `sequence`: checks it is current, places it on the grid and collects one
        /// delivery per live countdown into `batch`, removing finished and released ones.
        ///
        /// Grid: the tick stands for the grid point nearest to `clockNow`; the next tick is the
        /// grid point after that, so ticks are at least half an interval apart (no burst after
        /// a late tick or a suspend) and never drift. Grid points passed over are `missedTicks`.
        ///
        /// A countdown with at most `finishingTolerance` left finishes on this tick.
        ///
        /// - Returns: `nil` for a stale tick; otherwise the missed count and next deadline.
        /// - Complexity: O(n) in live countdowns, no allocation once `batch` has grown.
        mutating func beginTick(
            _ sequence: UInt64, clockNow: Int64, schedulerNow: MonotonicInstant, interval: Int64,
            finishingTolerance: Int64, released: inout [Registration]
        ) -> TickPlan? {
            self.counts.wakeUps += 1  // stale ones included: each ran on the scheduler
            guard self.phase == .armed(sequence) else { return nil }
            self.phase = .ticking(sequence)
            self.armedHandle = nil

            // Saturating: a huge interval or a far clock reading pins the grid at the end of time.
            let elapsed = clockNow.saturatingSubtracting(self.gridOrigin)
            var standsFor = elapsed.saturatingAdding(interval / 2) / interval
            if standsFor <= self.lastTickIndex { standsFor = self.lastTickIndex.saturatingAdding(1) }
            let missed = Int(standsFor.saturatingSubtracting(self.lastTickIndex.saturatingAdding(1)))
            self.lastTickIndex = standsFor
            let nextPoint = self.gridOrigin.saturatingAdding(
                standsFor.saturatingAdding(1).saturatingMultiplied(by: interval))
            let next = ArmDecision(
                deadline: schedulerNow.advanced(by: .nanoseconds(nextPoint.saturatingSubtracting(clockNow))))

            // Read pass over the contiguous table: no slot is copied (a copy of a weak reference
            // costs a side-table retain), one delivery per live countdown. Collected backwards so
            // the handlers, popping from the end, run in table order; positions to remove come
            // out in descending order, so removing them one by one never moves one still to do.
            self.batch.reserveCapacity(self.slots.count)
            self.removals.removeAll(keepingCapacity: true)
            self.slots.withUnsafeBufferPointer { slots in
                var position = slots.count &- 1
                while position >= 0 {
                    defer { position &-= 1 }
                    guard let receiver = slots[position].receiver else {
                        self.removals.append(position)
                        self.releasedCount += 1
                        self.counts.receiverReleased += 1
                        continue
                    }
                    let left = slots[position].deadline.saturatingSubtracting(clockNow)
                    let isFinal = left <= finishingTolerance
                    if isFinal {
                        self.removals.append(position)
                        self.counts.finished += 1
                        if left < -interval { self.counts.late += 1 }
                    }
                    self.batch.append(
                        Delivery(receiver: receiver, key: slots[position].key,
                                 registration: slots[position].registration,
                                 remaining: isFinal ? 0 : left, isFinal: isFinal))
                }
            }
            for position in self.removals {
                let registration = self.removeSlot(at: position)
                // A finished countdown's registration is still held by its delivery.
                released.append(registration)
            }
            self.checkInvariants()
            return TickPlan(missedTicks: missed, next: next)
        }

        /// Ends tick `sequence`: arms the next tick if countdowns remain, or goes idle.
        mutating func endTick(_ sequence: UInt64, next: ArmDecision) -> (ArmAction?, TickerStop?) {
            guard self.phase == .ticking(sequence) else { return (nil, nil) }  // stopped or restarted meanwhile
            if self.slots.isEmpty { return (nil, self.goIdle()) }
            return (self.arm(at: next.deadline), nil)
        }

        // MARK: Invariants

        /// Walks the whole table; compiled only with `SERIAL_INTERNAL_CHECKS` (opt-in; CI sets it).
        /// Tables past 1,024 slots get the O(1) checks only, so debug stress runs stay linear.
        func checkInvariants() {
            #if SERIAL_INTERNAL_CHECKS
            precondition(
                self.index.count == self.slots.count,
                "CountdownManager: internal inconsistency: index has \(self.index.count) keys, "
                    + "table \(self.slots.count)")
            guard self.slots.count <= 1_024 else { return }
            for (position, slot) in self.slots.enumerated() {
                precondition(
                    self.index[slot.key] == position,
                    "CountdownManager: internal inconsistency: slot \(position) is indexed at "
                        + String(describing: self.index[slot.key]))
                precondition(
                    slot.registration.isLive,
                    "CountdownManager: internal inconsistency: slot \(position) holds an ended registration")
            }
            #endif
        }
    }
}
