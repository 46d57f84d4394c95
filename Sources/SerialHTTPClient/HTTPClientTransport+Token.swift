#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import AsyncHTTPClient
import NIOHTTP1

extension HTTPClientTransport {
    /// Sends `request` without a credential and reports its body, trimmed of surrounding white
    /// space, as the new token: a building block for `RequestQueue.Policy.refresh`.
    ///
    /// ```swift
    /// let policy = RequestQueue<HTTPClientTransport>.Policy(
    ///     classify: HTTPClientTransport.classify,
    ///     refresh: { _, completion in
    ///         transport.fetchToken(HTTPRequest(.POST, url: "http://127.0.0.1:8080/token"), completion: completion)
    ///     })
    /// ```
    ///
    /// A status other than 2xx fails with `HTTPStatusError`; an empty body fails too.
    public func fetchToken(
        _ request: HTTPRequest, completion: @escaping @Sendable (Result<BearerToken, any Error>) -> Void
    ) {
        self.send(request, bearer: nil) { outcome in
            completion(outcome.flatMap { response in
                let token = response.bodyText.trimmingWhitespace()
                guard (200..<300).contains(response.status.code), !token.isEmpty else {
                    return .failure(HTTPStatusError(status: response.status, request: request.description))
                }
                return .success(BearerToken(token))
            })
        }
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace }
        guard let start = self.firstIndex(where: { !isSpace($0) }), let end = self.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(self[start...end])
    }
}
#endif  // HTTPClient
