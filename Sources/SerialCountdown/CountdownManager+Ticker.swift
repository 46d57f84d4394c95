import SerialCore

/// The shared ticker: one scheduled work at a time, on the manager's queue.
extension CountdownManager {
    /// Schedules tick `action.sequence`, then records its handle — unless the ticker stopped or
    /// moved on meanwhile, in which case the work is cancelled again (or finds itself stale).
    func arm(_ action: ArmAction) {
        // The work keeps the manager alive while countdowns exist (see "Lifetime").
        let handle = try! self.scheduler.schedule(at: action.deadline) { self.tick(action.sequence) }
        let current = self.state.withLock { $0.store(handle, for: action.sequence) }
        if !current { handle.cancel() }
    }

    /// One shared tick: decide every countdown's call under the lock, make the calls after it,
    /// then arm the next tick if countdowns remain.
    ///
    /// - Complexity: O(n) in live countdowns; no allocation per countdown once the reused batch
    ///   buffer has grown to the table's size.
    func tick(_ sequence: UInt64) {
        var released: [Registration] = []
        var batch: [Delivery] = []
        let plan = self.state.withLock { state -> TickPlan? in
            // Clock first, scheduler second: the next deadline is then never early on the clock.
            let clockNow = self.clockNanoseconds()
            let schedulerNow = self.scheduler.now
            let plan = state.beginTick(
                sequence, clockNow: clockNow, schedulerNow: schedulerNow, interval: self.intervalNanoseconds,
                finishingTolerance: self.intervalNanoseconds / 64, released: &released)
            swap(&batch, &state.batch)
            return plan
        }
        guard let plan else { return }  // stale: cancelled after it had started
        released.removeAll()  // releases purged registrations here, outside the lock

        self.deliver(&batch, missedTicks: plan.missedTicks)  // empties it, keeping its capacity

        let next = self.state.withLock { state -> ArmAction? in
            if state.batch.capacity < batch.capacity { swap(&batch, &state.batch) }
            return state.endTick(sequence, next: plan.next)
        }
        if let next { self.arm(next) }
    }

    /// Calls the handlers, in table order (the batch was collected backwards), emptying `batch`.
    ///
    /// Each delivery is moved out before its call and destroyed after it, so a receiver costs one
    /// retain (the weak load) and one release per tick — no copies.
    private func deliver(_ batch: inout [Delivery], missedTicks: Int) {
        while let delivery = batch.popLast() {
            // A countdown cancelled or replaced since collection gets no further tick call;
            // a final call was decided under the lock and is always made.
            guard delivery.isFinal || delivery.registration.isLive else { continue }
            var stop = false
            let tick = CountdownTick(
                remaining: .nanoseconds(delivery.remaining), missedTicks: missedTicks,
                end: delivery.isFinal ? .finished : nil)
            delivery.registration.handler(delivery.receiver, tick, &stop)
            if stop && !delivery.isFinal {
                self.remove(delivery.registration, key: ObjectIdentifier(delivery.receiver))
            }
        }
    }
}
