import SerialCore

/// Why a request ended without a response. Every submitted request ends exactly once, either with
/// a response or with one of these.
public enum RequestError: Error, CustomStringConvertible {
    /// `Policy.classify` said the outcome is a failure, with this error.
    case failed(any Error)
    /// The outcome stayed retryable after `attempts` sends (`Configuration.maximumRetries` + 1);
    /// `last` is the error of the last one.
    case retriesExhausted(attempts: Int, last: any Error)
    /// The request met an expired credential more than `limit` times
    /// (`Configuration.maximumRedirects`); it was not sent again, so it cannot loop.
    case tooManyRedirects(limit: Int)
    /// The credential refresh this request waited for failed with this error.
    case refreshFailed(any Error)
    /// The credential refresh this request waited for did not answer within
    /// `Configuration.refreshTimeout`.
    case refreshTimedOut(after: Duration)
    /// Refreshing again would exceed `limit` refreshes within `window`
    /// (`Configuration.refreshLimit`, `.refreshWindow`): the server keeps rejecting fresh
    /// credentials, or (with a known lifetime) they arrive with less than `refreshMargin` plus
    /// `retryInterval` of life, so the queue stops instead of looping.
    case refreshLimitExceeded(limit: Int, window: Duration)
    /// The policy said to use the cache, but `Policy.cachedResponse` had nothing for the request.
    case cacheMiss
    /// The request did not end within its timeout, counted from `submit`.
    case timedOut(after: Duration)
    /// `RequestHandle.cancel()` was called before the request ended.
    case cancelled
    /// The queue was shut down before the request ended (or before it was submitted).
    case shutDown
    /// The queue's scheduler stopped for good (its `SerialQueue` was shut down or released)
    /// before the request ended, or before it was submitted: nothing more could be sent, timed
    /// or delivered on it.
    case schedulerShutDown(SchedulingError)

    /// The case and, where there is one, the underlying error, for logs and messages.
    public var description: String {
        switch self {
        case .failed(let error):
            return "request failed: \(error)"
        case .retriesExhausted(let attempts, let last):
            return "request still failing after \(attempts) attempts; last error: \(last)"
        case .tooManyRedirects(let limit):
            return "credential expired more than \(limit) times for this request (maximumRedirects); not sent again"
        case .refreshFailed(let error):
            return "credential refresh failed: \(error)"
        case .refreshTimedOut(let after):
            return "credential refresh did not answer within \(after) (refreshTimeout)"
        case .refreshLimitExceeded(let limit, let window):
            return "credential refresh refused: \(limit) refreshes already ran within \(window) "
                + "(refreshLimit/refreshWindow); the server keeps rejecting new credentials, or they arrive "
                + "with less than refreshMargin + retryInterval of life"
        case .cacheMiss:
            return "the policy asked for the cached response, but the cache had none"
        case .timedOut(let after):
            return "request timed out after \(after)"
        case .cancelled:
            return "request cancelled"
        case .shutDown:
            return "request queue shut down"
        case .schedulerShutDown(let reason):
            return "request queue's \(reason)"
        }
    }
}
