#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
/// The credential an `HTTPClientTransport` sends: a short-lived bearer token, as
/// `Authorization: Bearer <value>`.
public struct BearerToken: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The token itself.
    public var value: String

    /// A token with `value`.
    public init(_ value: String) {
        self.value = value
    }

    /// A token written as a string literal: `BearerToken` values in tests and examples.
    public init(stringLiteral value: String) {
        self.value = value
    }

    /// The `Authorization` header value: `Bearer <value>`.
    public var headerValue: String { "Bearer \(self.value)" }

    /// The token itself, without the `Bearer ` prefix.
    public var description: String { self.value }
}
#endif  // HTTPClient
