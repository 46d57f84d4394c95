// Test hooks: read-only views of the state, for the package's own tests.
extension Poller {
    /// Responses ignored because their attempt was not the one in flight, over all sessions.
    package var _droppedResponses: Int { self.state.withLock { $0.droppedResponses } }

    /// Whether the poller waits for its next query's time (no query in flight, not finished).
    package var _isWaiting: Bool {
        self.state.withLock { state in
            if case .waiting = state.phase { return true }
            return false
        }
    }
}
