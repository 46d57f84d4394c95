import AsyncHTTPClient
import Synchronization

/// The cancellation an `HTTPRequest`'s attempts share: once fired, it cancels the HTTP request in
/// flight (AsyncHTTPClient closes its connection and fails it with `HTTPClientError.cancelled`)
/// and makes every later attempt fail at once with that error, without sending.
///
/// **Threads.** Any thread. Firing it twice, or after the request ended, does nothing.
public final class HTTPRequestCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var nextAttempt: UInt64 = 0
        var inFlight: [UInt64: HTTPClient.Task<HTTPClient.Response>] = [:]
    }

    private let state = Mutex(State())

    /// A cancellation not yet fired.
    public init() {}

    /// Whether `cancel()` has been called.
    public var isCancelled: Bool { self.state.withLock { $0.isCancelled } }

    /// Cancels the attempt in flight, if any, and refuses later attempts.
    public func cancel() {
        let tasks = self.state.withLock { state -> [HTTPClient.Task<HTTPClient.Response>] in
            guard !state.isCancelled else { return [] }
            state.isCancelled = true
            defer { state.inFlight = [:] }
            return Array(state.inFlight.values)
        }
        for task in tasks { task.cancel() }  // outside the lock: cancel may complete the task inline
    }

    /// Records `task` as in flight; returns its key, or `nil` (after cancelling it) when this
    /// cancellation has already fired.
    func register(_ task: HTTPClient.Task<HTTPClient.Response>) -> UInt64? {
        let key = self.state.withLock { state -> UInt64? in
            guard !state.isCancelled else { return nil }
            state.nextAttempt += 1
            state.inFlight[state.nextAttempt] = task
            return state.nextAttempt
        }
        if key == nil { task.cancel() }
        return key
    }

    /// Forgets the attempt `key`, which ended.
    func unregister(_ key: UInt64) {
        self.state.withLock { _ = $0.inFlight.removeValue(forKey: key) }
    }
}
