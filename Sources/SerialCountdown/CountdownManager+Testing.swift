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
}
