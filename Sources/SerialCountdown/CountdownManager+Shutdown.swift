import SerialCore

/// The failure path: terminal calls made outside a tick, and the scheduler's shutdown.
extension CountdownManager {
    /// Makes terminal calls (`.cancelled`, `.replaced`) on the queue, after what it already
    /// holds. A queue that refuses them has stopped for good: they are made here, on the calling
    /// thread, and every other countdown ends with `.shutDown`.
    ///
    /// The batch was recorded as pending under the same lock that ended its countdowns, so the
    /// ticker going idle meanwhile keeps listening for the shutdown until it is made.
    func deliverEndings(_ batch: EndingBatch) {
        do {
            try self.scheduler.execute { self.make(batch) }
        } catch {
            self.make(batch)
            self.schedulerDidShutDown(error)
        }
    }

    /// Makes a batch's calls unless they were made already (by the scheduler or the shutdown).
    private func make(_ batch: EndingBatch) {
        guard batch.claim() else { return }
        let unneeded = self.state.withLock { state in
            state.pendingEndings[batch.number] = nil
            return state.releaseSubscriptionIfUnneeded()
        }
        unneeded?.cancel()
        self.call(batch.deliveries)
    }

    /// The scheduler stopped for good (its shutdown handler ran, or it refused a tick): every
    /// countdown ends with one `.shutDown(reason)` call, made on this thread (the queue runs
    /// nothing more), and later registrations are refused. Idempotent.
    func schedulerDidShutDown(_ reason: SchedulingError) {
        var ended: [Registration] = []
        let (pending, deliveries, stop) = self.state.withLock {
            state -> ([EndingBatch], [EndingDelivery], TickerStop?) in
            if state.shutDown == nil { state.shutDown = reason }
            // Terminal calls the scheduler accepted but may have dropped; each batch is made once.
            let pending = state.pendingEndings.values.sorted { $0.number < $1.number }
            let deliveries = state.endAll(.shutDown(reason), now: self.clockNanoseconds(), into: &ended, keepingCapacity: false)
            return (pending, deliveries, state.phase == .idle ? nil : state.goIdle())
        }
        stop?.apply()
        for batch in pending { self.make(batch) }  // decided first, so made first
        self.call(deliveries)
    }

    /// Makes terminal calls here and now; a receiver released meanwhile gets none (and is counted).
    private func call(_ deliveries: [EndingDelivery]) {
        for delivery in deliveries {
            guard let receiver = delivery.receiver else {
                self.state.withLock { $0.releasedCount += 1 }
                continue
            }
            var ignored = false
            delivery.registration.handler(
                receiver, CountdownTick(remaining: .nanoseconds(delivery.remaining), end: delivery.end), &ignored)
        }
    }
}
