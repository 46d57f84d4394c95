// Test hooks: `package`, so only this package's tests see them.
extension CountdownManager {
    /// Whether the ticker is idle: no countdown and no scheduled tick.
    package var _isTickerIdle: Bool {
        self.state.withLock { $0.phase == .idle && $0.armedHandle == nil }
    }

    /// How many slots the table holds, released receivers not yet purged included.
    package var _slotCount: Int {
        self.state.withLock { $0.slots.count }
    }

    /// Puts in the table a countdown whose receiver was released and whose address `receiver`
    /// now occupies, as if malloc had reused it before a tick purged the old entry. Tests use it
    /// where the allocator does not reuse addresses at once (sanitizers quarantine freed memory).
    package func _plantReleasedReceiver(
        at receiver: AnyObject, for duration: Duration,
        handler: @escaping @Sendable (CountdownTick) -> Void
    ) {
        let registration = Registration { _, tick, _ in handler(tick) }
        let arm = self.state.withLock { state -> ArmAction? in
            let key = ObjectIdentifier(receiver)
            if state.index[key] != nil { fatalError("_plantReleasedReceiver: the address already has a countdown") }
            let now = self.clockNanoseconds()
            state.index[key] = state.slots.count
            state.slots.append(
                Slot(
                    releasedReceiverKey: key, deadline: now.saturatingAdding(max(0, duration.saturatingNanoseconds)),
                    registration: registration))
            return state.phase == .idle
                ? state.startIfIdle(clockNow: now, schedulerNow: self.scheduler.now, interval: self.intervalNanoseconds)
                : nil
        }
        if let arm { self.arm(arm) }
    }
}
