/// Sends requests for a `RequestQueue`: the network layer, injected so the queue knows nothing
/// of HTTP, sockets or the business code (tests inject a simulated server).
///
/// **Threads.** The queue calls `send` on its scheduler, never while holding a lock, at most once
/// per attempt. `completion` may be called from any thread, synchronously or later. The queue
/// uses the first call of each attempt; later calls, and calls after the request was cancelled,
/// timed out or shut down, are ignored, so a transport need not track cancellation.
public protocol RequestTransport: Sendable {
    /// What the caller asks for (e.g. a URL request description).
    associatedtype Request: Sendable
    /// What comes back (e.g. status, headers, body).
    associatedtype Response: Sendable
    /// What authorises a request (e.g. a short-lived token).
    associatedtype Credential: Sendable

    /// Sends `request` authorised by `credential`; reports the response or the transport error
    /// through `completion`. The queue's `Policy.classify` decides what the outcome means.
    func send(
        _ request: Request,
        credential: Credential,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    )
}
