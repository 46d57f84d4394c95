import FleetSupport
import Foundation
@testable import SerialPostgres
import SerialRuntime
import Testing

/// Attempts to break the promises of `PostgresTLS` and `CredentialSealing` (issue 40, item 6),
/// against the local clusters on 127.0.0.1: the plain one (ssl off) and the TLS-only one.
@Suite("PostgresTLS and CredentialSealing under attack", .serialized)
struct TLSAndSealingAttackTests {
    /// The `PostgresCoordinatorError` a connect throws; records an issue (and closes what it made) otherwise.
    private func connectRefusal(
        _ body: () async throws -> PostgresCredentialCoordinator<String>, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> PostgresCoordinatorError? {
        do {
            let coordinator = try await body()
            await coordinator.close()
            Issue.record("connected: expected a refusal", sourceLocation: sourceLocation)
        } catch let error as PostgresCoordinatorError {
            return error
        } catch {
            Issue.record("refused with another error: \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    // MARK: TLS

    /// `.automatic` is unencrypted only for the loopback spellings it knows; `127.1` and
    /// `0x7f.0.0.1` reach 127.0.0.1 all the same (inet_aton's forms), but count as remote: TLS is
    /// required and the server without TLS is refused, never fallen back from. Named, `.unencrypted`
    /// connects.
    @Test(arguments: ["127.1", "0x7f.0.0.1", "2130706433"])
    func aLoopbackAddressSpelledOtherwiseNeedsTLSUnlessUnencryptedIsNamed(host: String) async throws {
        let postgres = try SharedPostgres.get()  // ssl off
        var configuration = postgres.configuration()
        configuration.host = host
        let error = await self.connectRefusal { try await connectCoordinator(configuration) }
        guard case .tls(_, let reason)? = error, reason.contains("does not offer TLS") else {
            Issue.record("\(host) with .automatic: \(error.map { "\($0)" } ?? "connected")")
            return
        }
        configuration.tls = .unencrypted
        let named = try await connectCoordinator(configuration)
        try await closing([named]) { () async throws in #expect(try await named.current().credential == "secret-token-t0") }
    }

    /// Trust roots that hold no certificate (an empty PEM text, an empty file, a key instead of a
    /// certificate) are refused before any connection, naming them, not left to fail the
    /// handshake later as if the server's certificate were wrong.
    @Test func trustRootsWithoutACertificateAreRefusedBeforeAnyConnection() async throws {
        let (postgres, certificates) = try SharedTLSPostgres.get()
        let empty = "\(certificates.directory)/empty-\(UInt32.random(in: 0...UInt32.max)).pem"
        try "".write(toFile: empty, atomically: false, encoding: .utf8)
        defer { unlink(empty) }
        for roots in [PostgresTLS.TrustRoots.pem(""), .pemFile(path: empty), .pemFile(path: certificates.serverKey)] {
            var configuration = postgres.configuration()
            configuration.tls = .verified(trustRoots: roots, serverName: "localhost")
            let error = await self.connectRefusal { try await connectCoordinator(configuration) }
            guard case .tls(_, let reason)? = error, reason.contains("could not be loaded") else {
                Issue.record("\(roots.description): \(error.map { "\($0)" } ?? "connected")")
                continue
            }
        }
    }

    // MARK: Sealing

    /// A coordinator without sealing meets a sealed row: it lacks every key, so it refuses the
    /// row (naming the key) instead of handing its ciphertext to the queue as the credential.
    @Test func aCoordinatorWithoutSealingRefusesASealedRowInsteadOfUsingItsCiphertext() async throws {
        let postgres = try SharedPostgres.get()
        let configuration = postgres.configuration()
        let sealed = try await connectCoordinator(configuration, try CredentialSealing(sealingWith: sealingKey("k1", 1)))
        let plain = try await connectCoordinator(configuration)
        try await closing([sealed, plain]) { () async throws in
            do {
                let read = try await plain.current()
                Issue.record("a sealed row was read as the credential \"\(read.credential)\"")
            } catch let error as PostgresCoordinatorError {
                guard case .sealedWithUnknownKey(_, "k1", []) = error else {
                    Issue.record("refused for another reason: \(error)")
                    return
                }
                #expect("\(error)".contains("its codec does not seal: use codec.sealed(with:)"), "\(error)")
            }
            // The sealing replica is untouched by that refusal.
            #expect(try await sealed.current().credential == "secret-token-t0")
        }
    }

    /// Rotation as the article says, across coordinators: every replica first opens k2 while
    /// still sealing with k1; then replicas seal with k2 (still opening k1); k1 is retired last.
    /// Each step reads what the others wrote; a replica left out of the first step is refused,
    /// takes no lease, and the rotated replicas go on taking leases and publishing.
    @Test func keyRotationAcrossReplicasReadsBothKeysUntilTheOldOneIsRetired() async throws {
        let postgres = try SharedPostgres.get()
        let configuration = postgres.configuration()
        let (k1, k2) = (sealingKey("k1", 1), sealingKey("k2", 2))
        let before = try await connectCoordinator(configuration, try CredentialSealing(sealingWith: k1))
        let opening = try await connectCoordinator(configuration, try CredentialSealing(sealingWith: k1, alsoOpening: [k2]))
        let sealing = try await connectCoordinator(configuration, try CredentialSealing(sealingWith: k2, alsoOpening: [k1]))
        let retired = try await connectCoordinator(configuration, try CredentialSealing(sealingWith: k2))
        try await closing([before, opening, sealing, retired]) { () async throws in
            let table = configuration.table
            // Generation 0, sealed with k1 by the first to connect: the replica with k2 reads it.
            #expect(try await sealing.current().credential == "secret-token-t0")
            guard case .success(.lease(let lease1)) = await sealing.acquireWithin(.seconds(30), replacing: 0) else {
                Issue.record("no lease on generation 0")
                return
            }
            _ = await sealing.publishWithin(.seconds(30), "secret-token-t1", under: lease1)
            #expect(try postgres.sql("SELECT credential FROM \(table)").hasPrefix("sealed:v1:k2:"))
            #expect(try await opening.current().credential == "secret-token-t1", "the new key, opened before it sealed")
            #expect(try await retired.current().credential == "secret-token-t1")
            // The replica that never got k2: refused, naming the key; no lease taken.
            guard case .failure(PostgresCoordinatorError.sealedWithUnknownKey(_, "k2", ["k1"])) =
                await before.acquireWithin(.seconds(30), replacing: 0)
            else {
                Issue.record("a replica without k2 was not refused with the key's id")
                return
            }
            #expect(try postgres.leaseColumns(table) == "1|free|1")
            // A replica still sealing with k1 publishes generation 2: readable by all but the retired one.
            guard case .success(.lease(let lease2)) = await opening.acquireWithin(.seconds(30), replacing: 1) else {
                Issue.record("no lease on generation 1 after the refusal")
                return
            }
            _ = await opening.publishWithin(.seconds(30), "secret-token-t2", under: lease2)
            #expect(try await sealing.current().credential == "secret-token-t2")
            let early = await refusal { try await retired.current() }
            guard case .sealedWithUnknownKey(_, "k1", ["k2"])? = early else {
                Issue.record("k1 retired while a row needed it: \(String(describing: early))")
                return
            }
        }
    }

    /// A tampered row is refused by the replicas behind it, and another process that holds the
    /// row's generation takes the lease and publishes over it; the replicas behind then read the
    /// new generation: the fleet recovers without anyone deleting the row.
    @Test func aTamperedRowIsReplacedByAnotherReplicaAndTheOnesBehindRecover() async throws {
        let postgres = try SharedPostgres.get()
        let configuration = postgres.configuration()
        let sealing = try CredentialSealing(sealingWith: sealingKey("k1", 1))
        let behind = try await connectCoordinator(configuration, sealing)
        let ahead = try await connectCoordinator(configuration, sealing)
        try await closing([behind, ahead]) { () async throws in
            let table = configuration.table
            guard case .success(.lease(let lease)) = await ahead.acquireWithin(.seconds(30), replacing: 0) else {
                Issue.record("no lease")
                return
            }
            _ = await ahead.publishWithin(.seconds(30), "secret-token-t1", under: lease)
            _ = try postgres.sql("UPDATE \(table) SET credential = replace(credential, 'sealed:v1:k1:', 'sealed:v1:k1:00')")
            guard case .failure(PostgresCoordinatorError.unsealable) = await behind.acquireWithin(.seconds(30), replacing: 0)
            else {
                Issue.record("the tampered row was not refused")
                return
            }
            #expect(try postgres.leaseColumns(table) == "1|free|1")
            guard case .success(.lease(let next)) = await ahead.acquireWithin(.seconds(30), replacing: 1) else {
                Issue.record("the holder of generation 1 could not take the lease over the tampered row")
                return
            }
            let outcome = await ahead.publishWithin(.seconds(30), "secret-token-t2", under: next)
            #expect(outcome.map { "\($0)" } == "success(SerialRequests.PublishOutcome.accepted(generation: 2))")
            guard case .success(.published("secret-token-t2", generation: 2)) =
                await behind.acquireWithin(.seconds(30), replacing: 0)
            else {
                Issue.record("the replica behind did not recover the new generation")
                return
            }
        }
    }
}
