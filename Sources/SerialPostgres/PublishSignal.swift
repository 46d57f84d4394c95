#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
import SerialCore

/// Wakes the callers waiting behind another holder's lease when a NOTIFY says the credential
/// changed (published or released), so they re-read at once instead of at their next backoff.
///
/// A waiter reads `epoch` *before* it reads the row, and waits `since` that epoch: a NOTIFY that
/// arrives between its read and its wait has moved the epoch, so the wait ends at once instead of
/// sleeping a whole backoff step on news it already missed (a lost wake-up).
final class PublishSignal: Sendable {
    private struct State {
        /// How many signals so far.
        var epoch: UInt64 = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits that have an id but have not registered yet.
        var unregistered: Set<Int> = []
        /// Waits cancelled before they registered (they must not register afterwards).
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    private let state = LockedValue(State())

    /// How many signals so far: read it before looking at the row, then `wait(since:upTo:)`.
    var epoch: UInt64 { self.state.withLock { $0.epoch } }

    /// Returns `true` at the first signal after `epoch` (at once if there was one already), or
    /// `false` after `timeout`, whichever comes first.
    func wait(since epoch: UInt64, upTo timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            group.addTask { await self.nextSignal(since: epoch) }
            let signalled = await group.next() ?? false
            group.cancelAll()
            return signalled
        }
    }

    /// Wakes every waiter, and every later wait since an earlier epoch.
    func signal() {
        let waiters = self.state.withLock { state in
            state.epoch &+= 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// How many waits the signal keeps track of (registered, about to register, or cancelled
    /// before registering): zero once no wait is under way.
    var trackedWaitCount: Int {
        self.state.withLock { $0.waiters.count + $0.unregistered.count + $0.cancelled.count }
    }

    /// Returns `true` at the first signal after `epoch`, `false` when cancelled first.
    private func nextSignal(since epoch: UInt64) async -> Bool {
        let id = self.state.withLock { state in
            defer { state.nextID += 1 }
            state.unregistered.insert(state.nextID)
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = self.state.withLock { state -> Bool in
                    state.unregistered.remove(id)
                    if state.cancelled.remove(id) != nil || state.epoch != epoch { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                // Only a wait that has not registered yet must hear of it; one already resumed
                // (a signal came first) has nothing left to cancel, and its id must not stay.
                if state.unregistered.contains(id) { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume()
        }
        return self.state.withLock { $0.epoch != epoch }
    }
}
#endif  // Postgres
