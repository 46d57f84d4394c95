#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import NIOCore
import NIOHTTP1

/// What came back for an `HTTPRequest`: status, headers and the whole body.
public struct HTTPResponse: Sendable, CustomStringConvertible {
    /// The status.
    public var status: HTTPResponseStatus
    /// The headers.
    public var headers: HTTPHeaders
    /// The body (`nil` when there was none).
    public var body: ByteBuffer?

    /// A response from its parts.
    public init(status: HTTPResponseStatus, headers: HTTPHeaders = [:], body: ByteBuffer? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body decoded as UTF-8 (empty without a body).
    public var bodyText: String {
        self.body.map { String(buffer: $0) } ?? ""
    }

    /// The status code and the body's size, as `200 (12 bytes)`.
    public var description: String { "\(self.status.code) (\(self.body?.readableBytes ?? 0) bytes)" }
}
#endif  // HTTPClient
