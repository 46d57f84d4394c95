import SerialCore
import SerialPolling
import SerialTestSupport

/// Yields until `condition` holds or `timeout` of real time passes; `false` on timeout. For
/// waiting on work that runs in other tasks (async queries, iterating tasks) without sleeping.
func until(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let limit = monotonicNow() + UInt64(timeout.components.seconds) * 1_000_000_000
    while !condition() {
        if monotonicNow() > limit { return false }
        await Task.yield()
    }
    return true
}

/// An async wait that ends only when its task is cancelled (then throws CancellationError),
/// counting the cancellations it saw: a query that never answers by itself.
final class CancellationGate: Sendable {
    private let state = LockedValue<(waiter: CheckedContinuation<Void, any Error>?, cancelled: Bool)>((nil, false))
    private let seen: TestCounter

    init(countingIn seen: TestCounter) {
        self.seen = seen
    }

    func wait() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = self.state.withLock { state -> Bool in
                    if state.cancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            self.seen.increment()
            let waiter = self.state.withLock { state in
                state.cancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
