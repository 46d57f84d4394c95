import Synchronization

/// Collects completions by index: the first one of each index is kept, any later one is counted
/// as a duplicate; `wait` suspends until `count` indices completed, or the timeout passes.
final class Completions<Value: Sendable>: Sendable {
    private struct State {
        var values: [Int: Value] = [:]
        var duplicates: [Int] = []
        var waiter: (count: Int, continuation: CheckedContinuation<Bool, Never>)? = nil
    }

    private let state = Mutex(State())

    /// Records the completion of `index`.
    func record(_ index: Int, _ value: Value) {
        let wake = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if state.values[index] != nil {
                state.duplicates.append(index)
            } else {
                state.values[index] = value
            }
            guard let waiter = state.waiter, state.values.count >= waiter.count else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        wake?.resume(returning: true)
    }

    /// Waits until `count` indices have completed; `false` if `timeout` passed first.
    func wait(for count: Int, timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let done = self.state.withLock { state -> Bool in
                if state.values.count >= count { return true }
                state.waiter = (count, continuation)
                return false
            }
            if done {
                continuation.resume(returning: true)
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                let late = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    defer { state.waiter = nil }
                    return state.waiter?.continuation
                }
                late?.resume(returning: false)
            }
        }
    }

    var values: [Int: Value] { self.state.withLock { $0.values } }
    var count: Int { self.state.withLock { $0.values.count } }
    var duplicates: [Int] { self.state.withLock { $0.duplicates } }
}

/// Polls `condition` every 5 ms until it holds or `timeout` passes; returns whether it held.
func eventually(within timeout: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
