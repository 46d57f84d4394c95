import FleetSupport
import Foundation
@testable import SerialPostgres
import SerialRuntime
import Testing

/// One PostgreSQL cluster on 127.0.0.1 that admits TCP over TLS only (hostssl), with a certificate
/// for the name `localhost` from an authority made by openssl for this process; stopped, and the certificates
/// deleted, when the process exits.
enum SharedTLSPostgres {
    static let cluster: Result<(LocalPostgres, TestCertificates), any Error> = {
        let result = Result { () throws -> (LocalPostgres, TestCertificates) in
            let certificates = try TestCertificates.make()
            do {
                return (try LocalPostgres.start(tls: certificates), certificates)
            } catch {
                certificates.remove()
                throw error
            }
        }
        if case .success = result {
            atexit {
                if case .success(let (cluster, certificates)) = SharedTLSPostgres.cluster {
                    try? cluster.stop()
                    certificates.remove()
                }
            }
        }
        return result
    }()

    static func get() throws -> (LocalPostgres, TestCertificates) { try self.cluster.get() }
}

/// `PostgresTLS`: TLS required and verified, against a cluster on 127.0.0.1 that accepts TLS only.
@Suite("PostgresCredentialCoordinator over TLS", .serialized)
struct PostgresTLSTests {
    private func connect(
        _ postgres: LocalPostgres, _ tls: PostgresTLS
    ) async throws(PostgresCoordinatorError) -> PostgresCredentialCoordinator<String> {
        var configuration = postgres.configuration()
        configuration.tls = tls
        return try await PostgresCredentialCoordinator<String>.connect(configuration, initial: "t0", codec: .string)
    }

    /// The reason of the `.tls` error `body` throws; records an issue and returns nil for anything else.
    private func tlsFailure(
        _ body: () async throws -> PostgresCredentialCoordinator<String>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> String? {
        do {
            let coordinator = try await body()
            await coordinator.close()
            Issue.record("connected: expected a TLS error", sourceLocation: sourceLocation)
        } catch PostgresCoordinatorError.tls(_, let reason) {
            return reason
        } catch {
            Issue.record("expected a TLS error, got: \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func aConnectionVerifiedAgainstTheServersAuthorityWorksAndIsEncrypted() async throws {
        let (postgres, certificates) = try SharedTLSPostgres.get()
        let coordinator = try await self.connect(
            postgres, .verified(trustRoots: .pemFile(path: certificates.authority), serverName: "localhost"))
        try await closing([coordinator]) { () async throws in
            let current = try await coordinator.current()
            #expect(current.credential == "t0" && current.generation == 0)
            // The same root given as text.
            let byName = try await self.connect(
                postgres,
                .verified(trustRoots: .pem(try String(contentsOfFile: certificates.authority, encoding: .utf8)),
                          serverName: "localhost"))
            try await closing([byName]) { () async throws in
                #expect(try await byName.current().credential == "t0")
                // The server's own view: the coordinators' connections (session and LISTEN) use TLS.
                let encrypted = try postgres.sql(
                    "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) "
                        + "WHERE ssl AND client_port IS NOT NULL")
                #expect((Int(encrypted) ?? 0) >= 2, "connections over TLS seen by the server: \(encrypted)")
            }
        }
    }

    @Test func aWrongTrustRootFailsWithATLSErrorThatSaysSo() async throws {
        let (postgres, certificates) = try SharedTLSPostgres.get()
        let reason = await self.tlsFailure {
            try await self.connect(
                postgres, .verified(trustRoots: .pemFile(path: certificates.otherAuthority), serverName: "localhost"))
        }
        #expect(reason?.contains("handshake failed") == true && reason?.contains("trust roots") == true,
                "\(reason ?? "")")
        // The system's roots do not know the test's authority either: the default outside loopback.
        let system = await self.tlsFailure { try await self.connect(postgres, .verified()) }
        #expect(system?.contains("handshake failed") == true, "\(system ?? "")")
    }

    @Test func aCertificateThatDoesNotNameTheServerIsRefused() async throws {
        let (postgres, certificates) = try SharedTLSPostgres.get()
        let reason = await self.tlsFailure {
            try await self.connect(
                postgres, .verified(trustRoots: .pemFile(path: certificates.authority), serverName: "db.example"))
        }
        #expect(reason?.contains("handshake failed") == true, "\(reason ?? "")")
        // Without a server name the host, 127.0.0.1, is checked: the certificate names localhost only.
        let byAddress = await self.tlsFailure {
            try await self.connect(postgres, .verified(trustRoots: .pemFile(path: certificates.authority)))
        }
        #expect(byAddress?.contains("handshake failed") == true, "\(byAddress ?? "")")
    }

    @Test func aPlainConnectionToATLSOnlyServerFailsWithATLSErrorThatSaysSo() async throws {
        let (postgres, _) = try SharedTLSPostgres.get()
        let reason = await self.tlsFailure { try await self.connect(postgres, .unencrypted) }
        #expect(reason?.contains("refused this unencrypted connection") == true && reason?.contains("hostssl") == true,
                "\(reason ?? "")")
        // `.automatic` is unencrypted on loopback (the documented default there): refused alike.
        let automatic = await self.tlsFailure { try await self.connect(postgres, .automatic) }
        #expect(automatic?.contains("refused this unencrypted connection") == true, "\(automatic ?? "")")
    }

    @Test func aServerWithoutTLSIsRefusedWhenTLSIsRequired() async throws {
        let postgres = try SharedPostgres.get()  // ssl off
        let (_, certificates) = try SharedTLSPostgres.get()
        let reason = await self.tlsFailure {
            try await self.connect(
                postgres, .verified(trustRoots: .pemFile(path: certificates.authority), serverName: "localhost"))
        }
        #expect(reason?.contains("does not offer TLS") == true, "\(reason ?? "")")
    }

    @Test func trustRootsThatCannotBeLoadedFailBeforeAnyConnection() async throws {
        let configuration = PostgresCredentialCoordinator<String>.Configuration(
            host: "127.0.0.1", port: 1, username: "nobody", database: "none", name: "api",
            tls: .verified(trustRoots: .pemFile(path: "/nonexistent/ca.crt")))
        let reason = await self.tlsFailure {
            try await PostgresCredentialCoordinator<String>.connect(configuration, initial: "t0", codec: .string)
        }
        #expect(reason?.contains("could not be loaded") == true, "\(reason ?? "")")
    }

    @Test(arguments: [
        ("127.0.0.1", true), ("127.4.5.6", true), ("::1", true), ("localhost", true), ("LOCALHOST", true),
        ("10.0.0.1", false), ("128.0.0.1", false), ("127.0.0.1.example.com", false), ("1127.0.0.1", false),
        ("127.0.0", false), ("127.0.0.256", false), ("db.internal", false), ("::ffff:127.0.0.1", false),
    ])
    func automaticIsVerifiedOutsideLoopbackAndUnencryptedOnLoopback(host: String, loopback: Bool) {
        switch PostgresTLS.automatic.resolved(for: host) {
        case .unencrypted: #expect(loopback, "\(host) would be reached unencrypted")
        case .verified(.system, nil): #expect(!loopback, "\(host) would need TLS")
        default: Issue.record("\(host): resolved to something else")
        }
        // Asked for by name, each choice holds whatever the host.
        guard case .unencrypted = PostgresTLS.unencrypted.resolved(for: host) else {
            Issue.record("\(host): .unencrypted not kept")
            return
        }
        guard case .verified(.pemFile("/ca"), "n") = PostgresTLS.verified(trustRoots: .pemFile(path: "/ca"), serverName: "n")
            .resolved(for: host)
        else {
            Issue.record("\(host): .verified not kept")
            return
        }
    }
}
