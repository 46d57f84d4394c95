#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import NIOCore
import NIOHTTP1
import SerialRuntime

/// A request an `HTTPClientTransport` sends: method, absolute URL, headers and body, plus the
/// limits and the cancellation every attempt of it shares.
///
/// The transport adds `Authorization: Bearer <token>` at each send, replacing any such header,
/// so a request needs no rebuilding when the token changes.
public struct HTTPRequest: Sendable, CustomStringConvertible {
    /// The method.
    public var method: HTTPMethod
    /// The absolute URL, e.g. `http://127.0.0.1:8080/items/1`.
    public var url: String
    /// Headers sent as given (but `Authorization`, which the transport sets).
    public var headers: HTTPHeaders
    /// The body, if any.
    public var body: ByteBuffer?
    /// The longest one attempt may take before the HTTP request is cancelled and the attempt
    /// fails with `HTTPClientError.deadlineExceeded` (`nil`: the transport's default).
    public var attemptTimeout: Duration?
    /// No attempt runs much past this instant: it caps every attempt's HTTP deadline (plus a
    /// 100 ms grace, so that the queue's own timeout decides first). Set by
    /// `RequestQueue.submit` from the request's timeout.
    public var deadline: MonotonicInstant?
    /// Cancels the attempt in flight and refuses later ones. Copies of this value share it;
    /// `RequestQueue.submit` fires it when the request ends, whichever way.
    public let cancellation: HTTPRequestCancellation

    /// A request; each one gets its own `cancellation`.
    public init(
        _ method: HTTPMethod = .GET,
        url: String,
        headers: HTTPHeaders = [:],
        body: ByteBuffer? = nil,
        attemptTimeout: Duration? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.attemptTimeout = attemptTimeout
        self.deadline = nil
        self.cancellation = HTTPRequestCancellation()
    }

    /// Whether sending it twice has the effect of sending it once (RFC 9110 §9.2.2): only such
    /// requests are retried after an error that may have reached the server.
    public var isIdempotent: Bool {
        switch self.method {
        case .GET, .HEAD, .PUT, .DELETE, .OPTIONS, .TRACE: return true
        default: return false
        }
    }

    /// The method and URL, as `GET http://host/path`.
    public var description: String { "\(self.method) \(self.url)" }
}
#endif  // HTTPClient
