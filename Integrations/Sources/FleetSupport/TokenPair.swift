import AsyncHTTPClient
import Glibc
import NIOHTTP1
import SerialHTTPClient
import SerialPostgres
import SerialRuntime

/// The fleet's credential: an access token for requests and the refresh token that rotates with it.
public struct TokenPair: Sendable, Hashable, CustomStringConvertible {
    /// Sent as `Authorization: Bearer <access>`.
    public var access: String
    /// Sent to `POST /oauth/token` to get the next pair; good for one use.
    public var refresh: String
    /// When the access token expires, in milliseconds since 1970, when the server said.
    public var expiresAt: Int64?

    /// A pair.
    public init(access: String, refresh: String, expiresAt: Int64? = nil) {
        self.access = access
        self.refresh = refresh
        self.expiresAt = expiresAt
    }

    public var description: String {
        "\(self.access) \(self.refresh)" + (self.expiresAt.map { " \($0)" } ?? "")
    }

    /// The pair from `"<access> <refresh>"` or `"<access> <refresh> <expiry>"` (how the loopback
    /// server answers and how it is stored).
    public init?(text: String) {
        let parts = text.split(separator: " ")
        guard parts.count == 2 || parts.count == 3 else { return nil }
        let expiresAt = parts.count == 3 ? Int64(parts[2]) : nil
        if parts.count == 3 && expiresAt == nil { return nil }
        self.init(access: String(parts[0]), refresh: String(parts[1]), expiresAt: expiresAt)
    }

    /// The wall clock, in milliseconds since 1970.
    public static func unixMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// The loopback server's first pair.
    public static let initial = TokenPair(access: "a0", refresh: "r0")
}

struct NotATokenPair: Error, CustomStringConvertible {
    var text: String
    var description: String { "not a token pair: \(self.text)" }
}

extension PostgresCredentialCoordinator.Codec where Credential == TokenPair {
    /// Stored as `"<access> <refresh>"`.
    public static var tokenPair: Self {
        Self(encode: { $0.description }, decode: { text in
            guard let pair = TokenPair(text: text) else { throw NotATokenPair(text: text) }
            return pair
        })
    }
}

/// `HTTPClientTransport` with a `TokenPair` credential: requests carry its access token.
public struct FleetTransport: RequestTransport {
    /// The HTTP transport underneath.
    public let http: HTTPClientTransport

    /// A transport over `http`.
    public init(http: HTTPClientTransport) {
        self.http = http
    }

    /// Sends `request` with `Authorization: Bearer <access>`.
    public func send(
        _ request: HTTPRequest, credential: TokenPair,
        completion: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void
    ) {
        self.http.send(request, bearer: BearerToken(credential.access), completion: completion)
    }

    /// `POST <server>/oauth/token` with the pair's refresh token; the next pair, or the error.
    public func refresh(
        _ expired: TokenPair, server: String, worker: String,
        completion: @escaping @Sendable (Result<TokenPair, any Error>) -> Void
    ) {
        let request = HTTPRequest(
            .POST, url: server + "/oauth/token",
            headers: ["X-Refresh-Token": expired.refresh, "X-Worker": worker], attemptTimeout: .seconds(10))
        self.http.send(request, bearer: nil) { outcome in
            completion(outcome.flatMap { response in
                guard response.status == .ok, let pair = TokenPair(text: response.bodyText) else {
                    return .failure(HTTPStatusError(status: response.status, request: request.description))
                }
                return .success(pair)
            })
        }
    }
}
