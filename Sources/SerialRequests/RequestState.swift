/// Where a request stands. Observable through `RequestHandle.state` and the `onStateChange`
/// observer given to `RequestQueue.submit`.
///
/// A request starts `initial`, becomes `running` each time it is sent, may pass through `retry`
/// (waiting out a backoff, then queued again) and `redirect` (its credential expired: parked
/// until a refresh ends, or queued to be sent again with a newer credential), and ends in exactly
/// one of `success`, `failure` or `useCache`. A cancelled, timed-out or shut-down request ends in
/// `failure`, with the reason in its `RequestError`.
public enum RequestState: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// Submitted, waiting for its first send.
    case initial
    /// A retryable failure came back; waiting out the backoff or queued to be sent again.
    case retry
    /// The credential expired; parked for the refresh, or queued to be sent again with a newer one.
    case redirect
    /// Sent; waiting for the transport's answer.
    case running
    /// Ended with the transport's response.
    case success
    /// Ended with an error.
    case failure
    /// Ended with a response served from the cache.
    case useCache

    /// Whether this state ends the request (`success`, `failure`, `useCache`).
    public var isFinal: Bool {
        switch self {
        case .success, .failure, .useCache: return true
        case .initial, .retry, .redirect, .running: return false
        }
    }

    /// The state's name, for logs.
    public var description: String {
        switch self {
        case .initial: return "initial"
        case .retry: return "retry"
        case .redirect: return "redirect"
        case .running: return "running"
        case .success: return "success"
        case .failure: return "failure"
        case .useCache: return "useCache"
        }
    }
}
