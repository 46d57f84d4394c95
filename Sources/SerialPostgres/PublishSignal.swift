#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
import SerialCore

/// Wakes the callers waiting behind another holder's lease when a NOTIFY says the credential
/// changed (published or released), so they re-read at once instead of at their next backoff.
final class PublishSignal: Sendable {
    private struct State {
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits cancelled before they registered (they must not register afterwards).
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    private let state = LockedValue(State())

    /// Returns at the next `signal()`, or after `timeout`, whichever comes first.
    func wait(upTo timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.nextSignal() }
            _ = await group.next()
            group.cancelAll()
        }
    }

    /// Wakes every waiter.
    func signal() {
        let waiters = self.state.withLock { state in
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func nextSignal() async {
        let id = self.state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = self.state.withLock { state -> Bool in
                    if state.cancelled.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                state.cancelled.insert(id)
                return nil
            }
            waiter?.resume()
        }
    }
}
#endif  // Postgres
