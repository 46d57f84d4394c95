#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import SerialRuntime

extension RequestQueue where Transport == HTTPClientTransport {
    /// `RequestQueue.submit`, for HTTP: the request's `deadline` becomes its timeout (so the HTTP
    /// deadline falls with the queue's), and when the request ends — success, failure, `cancel()`,
    /// timeout or shutdown — its `HTTPRequestCancellation` fires before `completion` runs, so no
    /// HTTP request outlives the request it was sent for.
    ///
    /// Same ordering, limits and exactly-once guarantee as the general `submit`.
    @discardableResult
    public func submit(
        _ request: HTTPRequest,
        priority: RequestPriority = .default,
        kind: RequestKind? = nil,
        timeout: Duration? = nil,
        onStateChange: (@Sendable (RequestState) -> Void)? = nil,
        completion: @escaping @Sendable (RequestResult<HTTPResponse>) -> Void
    ) -> RequestHandle {
        var request = request
        if let limit = timeout ?? self.configuration.defaultTimeout {
            request.deadline = MonotonicInstant.now() + limit
        }
        let cancellation = request.cancellation
        return submitToQueue(
            self, request, priority: priority, kind: kind, timeout: timeout, onStateChange: onStateChange
        ) { result in
            cancellation.cancel()
            completion(result)
        }
    }

    /// `RequestQueue.response(for:)`, for HTTP: submits through the HTTP `submit` (deadline,
    /// cancellation of the HTTP request when it ends) and suspends until the request ends.
    /// Cancelling the calling task cancels the request.
    public func response(
        for request: HTTPRequest,
        priority: RequestPriority = .default,
        kind: RequestKind? = nil,
        timeout: Duration? = nil
    ) async -> RequestResult<HTTPResponse> {
        let slot = RequestCancellationSlot()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<RequestResult<HTTPResponse>, Never>) in
                let handle = self.submit(request, priority: priority, kind: kind, timeout: timeout) { result in
                    continuation.resume(returning: result)
                }
                slot.attach(handle)
            }
        } onCancel: {
            slot.cancel()
        }
    }
}

/// The general `RequestQueue.submit`: called from a generic context, where the HTTP overload
/// above (which would call itself) is not a candidate.
private func submitToQueue<Transport: RequestTransport>(
    _ queue: RequestQueue<Transport>,
    _ request: Transport.Request,
    priority: RequestPriority,
    kind: RequestKind?,
    timeout: Duration?,
    onStateChange: (@Sendable (RequestState) -> Void)?,
    completion: @escaping @Sendable (RequestResult<Transport.Response>) -> Void
) -> RequestHandle {
    queue.submit(
        request, priority: priority, kind: kind, timeout: timeout, onStateChange: onStateChange,
        completion: completion)
}
#endif  // HTTPClient
