import SerialCore

/// The shared ticker: one scheduled work at a time, on the manager's queue.
extension CountdownManager {
    /// Schedules tick `action.sequence`, then records its handle — unless the ticker stopped or
    /// moved on meanwhile, in which case the work is cancelled again (or finds itself stale).
    ///
    /// A run of the ticker (from idle back to idle) first subscribes to the scheduler's shutdown,
    /// before its first tick is scheduled, so no shutdown from then on goes unheard. A scheduler
    /// that refuses the tick has shut down: every countdown ends here, on this thread.
    func arm(_ action: ArmAction) {
        if action.startsRun {
            // Holds the manager while the run lasts (see "Lifetime"); withdrawn when it goes idle.
            let subscription = self.scheduler.whenShutDown { reason in self.schedulerDidShutDown(reason) }
            let kept = self.state.withLock { $0.store(subscription, forRun: action.sequence) }
            if !kept { subscription.cancel() }
        }
        let handle: DelayedWork
        do {
            // The work keeps the manager alive while countdowns exist (see "Lifetime").
            handle = try self.scheduler.schedule(at: action.deadline) { self.tick(action.sequence) }
        } catch {
            self.schedulerDidShutDown(error)
            return
        }
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

        let (next, stop) = self.state.withLock { state -> (ArmAction?, TickerStop?) in
            if state.batch.capacity < batch.capacity { swap(&batch, &state.batch) }
            return state.endTick(sequence, next: plan.next)
        }
        stop?.apply()
        if let next { self.arm(next) }
    }

    /// Calls the handlers, in table order (the batch was collected backwards), emptying `batch`.
    ///
    /// Each delivery is moved out before its call and destroyed after it; its receiver is loaded
    /// from the weak reference just before the call and held only for it, so a receiver released
    /// by an earlier handler of the same tick gets no call.
    private func deliver(_ batch: inout [Delivery], missedTicks: Int) {
        while let delivery = batch.popLast() {
            // A countdown cancelled or replaced since collection gets no further tick call (its
            // own terminal call is on its way); a final call was decided under the lock.
            guard delivery.isFinal || delivery.registration.isLive else { continue }
            guard let receiver = delivery.receiver else {
                // Released during this tick. A final delivery has left the table: count it here;
                // a running countdown is purged, and counted, by the next tick.
                if delivery.isFinal { self.state.withLock { $0.releasedCount += 1 } }
                continue
            }
            var stop = false
            let tick = CountdownTick(
                remaining: .nanoseconds(delivery.remaining), missedTicks: missedTicks,
                end: delivery.isFinal ? .finished : nil)
            delivery.registration.handler(receiver, tick, &stop)
            // The stop flag ends the countdown unless something else ended it during the call
            // (cancel or re-registration from the handler: that ending's call is on its way).
            if stop && !delivery.isFinal && self.remove(delivery.registration, key: delivery.key, as: .stopped) {
                var ignored = false
                let stopped = CountdownTick(
                    remaining: .nanoseconds(delivery.remaining), missedTicks: missedTicks, end: .stopped)
                delivery.registration.handler(receiver, stopped, &ignored)
            }
        }
    }
}
