#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import AsyncHTTPClient

extension HTTPClientTransport {
    /// Runs `body` with a transport on a new client made with `configuration`, then shuts the
    /// client down — after `body` returns or throws — and returns `body`'s result.
    ///
    /// Shut down the queues that use the transport inside `body`; requests still in flight when
    /// the client shuts down fail with `HTTPClientError.cancelled`.
    public static func withTransport<Result: Sendable>(
        configuration: HTTPClient.Configuration = .init(),
        defaultAttemptTimeout: Duration? = nil,
        _ body: (HTTPClientTransport) async throws -> Result
    ) async throws -> Result {
        let transport = HTTPClientTransport(configuration: configuration, defaultAttemptTimeout: defaultAttemptTimeout)
        let result: Result
        do {
            result = try await body(transport)
        } catch {
            try? await transport.shutdown()
            throw error
        }
        try await transport.shutdown()
        return result
    }
}
#endif  // HTTPClient
