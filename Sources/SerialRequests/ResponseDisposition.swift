/// What a response means, as decided by `RequestQueue.Policy.classify`.
public enum ResponseDisposition: Sendable {
    /// Done: deliver the response. (If the transport reported an error, the request fails with it.)
    case success
    /// Done: fail the request with `RequestError.failed(error)`.
    case failure(any Error)
    /// A transient failure: send again after a backoff, up to `Configuration.maximumRetries`,
    /// then fail with `RequestError.retriesExhausted`.
    case retry(any Error)
    /// The credential the request was sent with has expired: park the request (redirect), refresh
    /// the credential once for all such requests, and send it again with the new one.
    case credentialExpired
    /// Serve the request from `Policy.cachedResponse` instead (a miss fails with
    /// `RequestError.cacheMiss`).
    case useCache
}
