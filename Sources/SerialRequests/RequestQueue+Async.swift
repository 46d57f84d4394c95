import SerialCore
extension RequestQueue {
    /// Submits `request` and suspends until it ends; returns its result. Cancelling the calling
    /// task cancels the request (it then ends with `RequestError.cancelled`, unless it had
    /// already ended).
    ///
    /// Same ordering, limits and exactly-once guarantee as `submit`; the result is handed over
    /// from the scheduler, or with `RequestError.schedulerShutDown` when the scheduler stops for
    /// good first.
    public func response(
        for request: Request,
        priority: RequestPriority = .default,
        kind: RequestKind? = nil,
        timeout: Duration? = nil
    ) async -> RequestResult<Response> {
        let slot = RequestCancellationSlot()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<RequestResult<Response>, Never>) in
                let handle = self.submit(request, priority: priority, kind: kind, timeout: timeout) { result in
                    continuation.resume(returning: result)
                }
                slot.attach(handle)
            }
        } onCancel: {
            RuntimeCallback.run { slot.cancel() }  // under the runtime's lock: see RuntimeCallback
        }
    }
}
