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
    /// | 408, 429, 500, 502, 503, 504 | `.retry(HTTPStatusError)` |
    /// | any other status | `.failure(HTTPStatusError)` |
    /// | connection closed, deadline exceeded, connect or read timeout, other I/O errors | `.retry(error)` for idempotent requests, else `.failure(error)` |
    /// | cancelled, redirect cycle or limit, invalid request | `.failure(error)` |
    ///
    /// An error after the request may have reached the server is retried only for idempotent
    /// methods (`HTTPRequest.isIdempotent`): a POST is never sent twice by this policy.
    public static func classify(
        _ request: HTTPRequest, _ outcome: Result<HTTPResponse, any Error>
    ) -> ResponseDisposition {
        switch outcome {
        case .success(let response):
            switch response.status.code {
            case 100..<400: return .success
            case 401: return .credentialExpired
            case 408, 429, 500, 502, 503, 504:
                return .retry(HTTPStatusError(status: response.status, request: request.description))
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
