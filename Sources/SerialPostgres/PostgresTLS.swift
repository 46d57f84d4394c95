#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
import NIOSSL
import PostgresNIO

/// How a `PostgresCredentialCoordinator` protects its connections to PostgreSQL: the credential
/// crosses them in clear unless they are encrypted.
///
/// - `.automatic` (the default): TLS, required and verified against the system's trust roots,
///   for every host outside loopback; unencrypted for a loopback host (`127.0.0.0/8` written as a
///   dotted quad, `::1`, `localhost`), whose traffic never leaves the machine, as before this
///   option existed. Any other spelling of a host counts as remote, so the doubt goes to TLS.
/// - `.verified(trustRoots:serverName:)`: TLS, required (a server that does not offer it is
///   refused, never fallen back from) and verified: the server's certificate must chain to
///   `trustRoots` and name `serverName`, or the host when none is given (NIOSSL's check: a DNS name
///   in the certificate that matches, or an IP address in it equal to the address connected to).
///   At least TLS 1.2.
/// - `.unencrypted`: no TLS, to any host, only when named: nothing else ever picks it for a host
///   outside loopback.
///
/// A failure to agree on TLS ends `connect` (and later calls) with `PostgresCoordinatorError.tls`.
public struct PostgresTLS: Sendable, CustomStringConvertible {
    /// The certificates a server's chain must lead to.
    public enum TrustRoots: Sendable {
        /// The system's trust store (on Linux, OpenSSL's default paths, `/etc/ssl/certs`).
        case system
        /// The PEM certificates in the file at `path` (a private CA's root, for instance).
        case pemFile(path: String)
        /// PEM certificates given as text.
        case pem(String)

        /// Where the roots come from, in words (a file's path; never the certificates themselves).
        var description: String {
            switch self {
            case .system: return "system trust roots"
            case .pemFile(let path): return "trust roots in \(path)"
            case .pem: return "given PEM trust roots"
            }
        }
    }

    enum Mode: Sendable {
        case automatic
        case verified(TrustRoots, serverName: String?)
        case unencrypted
    }

    let mode: Mode

    /// TLS verified against the system's trust roots outside loopback; unencrypted on loopback.
    public static var automatic: PostgresTLS { PostgresTLS(mode: .automatic) }

    /// TLS required and verified against `trustRoots`, for the host's name or address, or for
    /// `serverName` when given (a certificate issued for a name, reached at an address).
    public static func verified(trustRoots: TrustRoots = .system, serverName: String? = nil) -> PostgresTLS {
        PostgresTLS(mode: .verified(trustRoots, serverName: serverName))
    }

    /// No TLS: the credential and every statement cross the network in clear. Asked for by name only.
    public static var unencrypted: PostgresTLS { PostgresTLS(mode: .unencrypted) }

    /// The choice in words: `automatic`, `verified(system)`, `verified(pemFile /path)`, `unencrypted`.
    public var description: String {
        switch self.mode {
        case .automatic: return "automatic"
        case .unencrypted: return "unencrypted"
        case .verified(let roots, let serverName):
            return "verified(\(roots.description)\(serverName.map { ", server name \($0)" } ?? ""))"
        }
    }

    /// What this choice means for `host`: `.automatic` resolved.
    func resolved(for host: String) -> Mode {
        guard case .automatic = self.mode else { return self.mode }
        return Self.isLoopback(host) ? .unencrypted : .verified(.system, serverName: nil)
    }

    /// postgres-nio's TLS for `host`, and the server name to verify (nil: the host itself).
    func connectionTLS(for host: String, endpoint: String) throws(PostgresCoordinatorError)
        -> (tls: PostgresConnection.Configuration.TLS, serverName: String?)
    {
        guard case .verified(let roots, let serverName) = self.resolved(for: host) else { return (.disable, nil) }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        do {
            switch roots {
            case .system: configuration.trustRoots = .default
            case .pemFile(let path): configuration.trustRoots = .file(path)
            case .pem(let text): configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(text.utf8)))
            }
            return (.require(try NIOSSLContext(configuration: configuration)), serverName)
        } catch {
            throw .tls(endpoint: endpoint, reason: "the \(roots.description) could not be loaded: \(error)")
        }
    }

    /// `127.0.0.0/8` as a dotted quad, `::1`, or `localhost`: addresses whose traffic stays on this machine.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        let octets = parts.compactMap { part in
            part.count <= 3 && part.allSatisfy { $0.isASCII && $0.isNumber } ? Int(part) : nil
        }
        return octets.count == 4 && octets.allSatisfy { $0 <= 255 } && octets[0] == 127
    }
}

extension PostgresCoordinatorError {
    /// The error of a failed connection attempt, in the words of its most likely cause: TLS
    /// problems (a certificate not verified, a server without TLS, a server that wants TLS) are
    /// `.tls`, the rest `.unreachable`.
    static func connectionFailed(endpoint: String, encrypted: Bool, _ error: any Error) -> PostgresCoordinatorError {
        let reason = PostgresSession.reason(error)
        guard let error = error as? PSQLError else { return .unreachable(endpoint: endpoint, reason: reason) }
        if error.code == .sslUnsupported {
            return .tls(endpoint: endpoint, reason: "the server does not offer TLS (its ssl setting is off)")
        }
        if let underlying = error.underlying, underlying is NIOSSLError || underlying is BoringSSLError
            || underlying is NIOSSLExtraError
        {
            return .tls(endpoint: endpoint, reason: "the handshake failed: \(underlying) (is the server's certificate "
                + "issued by the configured trust roots, for this host?)")
        }
        // 28000, invalid_authorization_specification: no pg_hba.conf line admits this connection.
        if !encrypted, error.serverInfo?[.sqlState] == "28000" {
            return .tls(endpoint: endpoint, reason: "the server refused this unencrypted connection (\(reason)); "
                + "if it admits this role over TLS only (hostssl in pg_hba.conf), configure tls: .verified(...)")
        }
        return .unreachable(endpoint: endpoint, reason: reason)
    }
}
#endif  // Postgres
