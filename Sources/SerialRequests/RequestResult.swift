/// How a request ended: the value its completion receives, exactly once.
public enum RequestResult<Response: Sendable>: Sendable {
    /// The transport's response (state `success`).
    case success(Response)
    /// A response served from the cache because the policy said so (state `useCache`).
    case cached(Response)
    /// No response (state `failure`).
    case failure(RequestError)

    /// The response, fresh or cached; throws the `RequestError` otherwise.
    public func get() throws(RequestError) -> Response {
        switch self {
        case .success(let response), .cached(let response): return response
        case .failure(let error): throw error
        }
    }

    /// The error, or `nil` when a response came.
    public var error: RequestError? {
        if case .failure(let error) = self { return error }
        return nil
    }

    /// The final state this result corresponds to.
    public var state: RequestState {
        switch self {
        case .success: return .success
        case .cached: return .useCache
        case .failure: return .failure
        }
    }
}
