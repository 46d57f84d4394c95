#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import NIOHTTP1

/// A response whose status `HTTPClientTransport.classify` treats as an error.
public struct HTTPStatusError: Error, Hashable, CustomStringConvertible {
    /// The status that came back.
    public var status: HTTPResponseStatus
    /// The request, as `METHOD url`.
    public var request: String

    /// An error for `status` in answer to `request`.
    public init(status: HTTPResponseStatus, request: String) {
        self.status = status
        self.request = request
    }

    /// The request and the status it was answered with.
    public var description: String { "\(self.request) answered \(self.status.code) \(self.status.reasonPhrase)" }
}
#endif  // HTTPClient
