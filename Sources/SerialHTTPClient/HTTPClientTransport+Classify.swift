#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import AsyncHTTPClient
import NIOCore
import NIOPosix
import NIOHTTP1
import SerialRuntime

extension HTTPClientTransport {
    /// The usual meaning of an HTTP outcome, for `RequestQueue.Policy.classify`:
    ///
    /// | outcome | disposition |
    /// |---|---|
    /// | 1xx–3xx (redirects AsyncHTTPClient did not follow) | `.success` |
    /// | 401 Unauthorized | `.credentialExpired`: park, refresh once, send again |
    /// | 408, 429, 503 | `.retry(HTTPStatusError)`: the server says it did not act on the request |
    /// | 500, 502, 504 | `.retry(HTTPStatusError)` for idempotent requests, else `.failure` |
    /// | any other status | `.failure(HTTPStatusError)` |
    /// | connection closed, deadline exceeded, connect or read timeout, other I/O errors | `.retry(error)` for idempotent requests, else `.failure(error)` |
    /// | cancelled, redirect cycle or limit, invalid request | `.failure(error)` |
    ///
    /// An outcome after which the server may have acted on the request is retried only for
    /// idempotent methods (`HTTPRequest.isIdempotent`): this policy sends a POST again only when
    /// the server said it did not act on it (408, 429, 503).
    public static func classify(
        _ request: HTTPRequest, _ outcome: Result<HTTPResponse, any Error>
    ) -> ResponseDisposition {
        switch outcome {
        case .success(let response):
            switch response.status.code {
            case 100..<400: return .success
            case 401: return .credentialExpired
            case 408, 429, 503:
                return .retry(HTTPStatusError(status: response.status, request: request.description))
            case 500, 502, 504:
                // Retried only when sending again cannot do the work twice.
                let error = HTTPStatusError(status: response.status, request: request.description)
                return request.isIdempotent ? .retry(error) : .failure(error)
            default:
                return .failure(HTTPStatusError(status: response.status, request: request.description))
            }
        case .failure(let error):
            return Self.isTransient(error) && request.isIdempotent ? .retry(error) : .failure(error)
        }
    }

    /// Whether `error` is one a later attempt may not meet (a connection or timing failure).
    public static func isTransient(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError {
            switch error {
            case .cancelled, .redirectCycleDetected, .redirectLimitReached, .invalidURL, .emptyHost, .emptyScheme,
                .alreadyShutdown, .bodyLengthMismatch, .traceRequestWithBody:
                return false
            default:
                return true  // deadlineExceeded, remoteConnectionClosed, read/connect timeouts, pool timeouts…
            }
        }
        return error is IOError || error is ChannelError || error is NIOConnectionError
    }
}
#endif  // HTTPClient
