#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import AsyncHTTPClient
import SerialCore

/// The cancellation an `HTTPRequest`'s attempts share: once fired, it cancels the HTTP request in
/// flight (AsyncHTTPClient closes its connection and fails it with `HTTPClientError.cancelled`)
/// and makes every later attempt fail at once with that error, without sending.
///
/// **Threads.** Any thread. Firing it twice, or after the request ended, does nothing.
public final class HTTPRequestCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var nextAttempt: UInt64 = 0
        /// The queue runs one attempt of a request at a time: it sits in `current`; `others`
        /// holds any more (a caller sending the same request itself), so the usual case allocates nothing.
        var current: (key: UInt64, task: HTTPClient.Task<HTTPClient.Response>)? = nil
        var others: [UInt64: HTTPClient.Task<HTTPClient.Response>] = [:]
    }

    private let state = LockedValue(State())

    /// A cancellation not yet fired.
    public init() {}

    /// Whether `cancel()` has been called.
    public var isCancelled: Bool { self.state.withLock { $0.isCancelled } }

    /// Cancels the attempt in flight, if any, and refuses later attempts.
    public func cancel() {
        let tasks = self.state.withLock { state -> [HTTPClient.Task<HTTPClient.Response>] in
            guard !state.isCancelled else { return [] }
            state.isCancelled = true
            defer {
                state.current = nil
                state.others = [:]
            }
            return (state.current.map { [$0.task] } ?? []) + state.others.values
        }
        for task in tasks { task.cancel() }  // outside the lock: cancel may complete the task inline
    }

    /// Records `task` as in flight; returns its key, or `nil` (after cancelling it) when this
    /// cancellation has already fired.
    func register(_ task: HTTPClient.Task<HTTPClient.Response>) -> UInt64? {
        let key = self.state.withLock { state -> UInt64? in
            guard !state.isCancelled else { return nil }
            state.nextAttempt += 1
            if state.current == nil {
                state.current = (state.nextAttempt, task)
            } else {
                state.others[state.nextAttempt] = task
            }
            return state.nextAttempt
        }
        if key == nil { task.cancel() }
        return key
    }

    /// Forgets the attempt `key`, which ended.
    func unregister(_ key: UInt64) {
        self.state.withLock { state in
            if state.current?.key == key {
                state.current = nil
            } else {
                state.others[key] = nil
            }
        }
    }
}
#endif  // HTTPClient
