import FleetSupport
import Foundation
@testable import SerialPostgres
import SerialRuntime
import Testing

/// `CredentialSealing`: the stored row holds nothing usable, and a row this coordinator cannot
/// authenticate is refused without taking or holding a lease.
@Suite("CredentialSealing", .serialized)
struct CredentialSealingTests {
    // MARK: Without a database

    @Test func aSealedValueOpensOnlyForItsOwnTableCredentialAndGeneration() throws {
        let sealing = try CredentialSealing(sealingWith: sealingKey("k1", 1))
        let row = RowIdentity(table: "t", name: "api", generation: 1)
        let sealed = try sealing.seal("secret-token", for: row)
        #expect(sealed.hasPrefix("sealed:v1:k1:") && !sealed.contains("secret-token"))
        #expect(try sealing.open(sealed, for: row) == "secret-token")
        for other in [RowIdentity(table: "t", name: "api", generation: 2), RowIdentity(table: "t", name: "web", generation: 1),
                      RowIdentity(table: "u", name: "api", generation: 1)] {
            #expect(throws: PostgresCoordinatorError.self, "opened for \(other)") { try sealing.open(sealed, for: other) }
        }
        #expect(try sealing.seal("secret-token", for: row) != sealed, "a fresh nonce per seal")
    }

    @Test func aRotatedSealingKeyStillOpensRowsSealedWithTheOlderOne() throws {
        let row = RowIdentity(table: "t", name: "api", generation: 0)
        let old = try CredentialSealing(sealingWith: sealingKey("2026-10", 1)).seal("t0", for: row)
        let rotated = try CredentialSealing(sealingWith: sealingKey("2026-11", 2), alsoOpening: [sealingKey("2026-10", 1)])
        #expect(try rotated.open(old, for: row) == "t0")
        #expect(try rotated.seal("t0", for: row).hasPrefix("sealed:v1:2026-11:"))
        let retired = try CredentialSealing(sealingWith: sealingKey("2026-11", 2))
        do {
            _ = try retired.open(old, for: row)
            Issue.record("opened a row sealed with a key it does not have")
        } catch {
            #expect("\(error)" == "credential \"api\" is sealed with key \"2026-10\", which this coordinator does not "
                + "have (it has \"2026-11\"): deploy that key to open it")
        }
    }

    @Test func keysAndKeySetsAreValidatedWhole() {
        #expect(throws: PostgresCoordinatorError.self) { try CredentialSealing.Key(id: "k", bytes: [1, 2, 3]) }
        #expect(throws: PostgresCoordinatorError.self) { try CredentialSealing.Key(id: "a:b", bytes: .init(repeating: 0, count: 32)) }
        #expect(throws: PostgresCoordinatorError.self) { try CredentialSealing.Key(id: "", bytes: .init(repeating: 0, count: 32)) }
        #expect(throws: PostgresCoordinatorError.self) {
            try CredentialSealing(sealingWith: sealingKey("k", 1), alsoOpening: [sealingKey("k", 2)])
        }
    }

    // MARK: Against the local cluster

    @Test func theStoredRowHoldsTheKeyIdAndCiphertextButNoToken() async throws {
        let postgres = try SharedPostgres.get()
        let configuration = postgres.configuration()
        let sealing = try CredentialSealing(sealingWith: sealingKey("k1", 7))
        let first = try await connectCoordinator(configuration, sealing)
        let second = try await connectCoordinator(configuration, sealing)
        try await closing([first, second]) { () async throws in
            let stored0 = try postgres.sql("SELECT credential FROM \(configuration.table)")
            #expect(stored0.hasPrefix("sealed:v1:k1:") && !stored0.contains("secret-token"), "stored: \(stored0)")
            guard case .success(.lease(let lease)) = await first.acquireWithin(.seconds(30), replacing: 0) else {
                Issue.record("no lease")
                return
            }
            let outcome = await first.publishWithin(.seconds(30), "secret-token-t1", under: lease)
            #expect(outcome.map { "\($0)" } == "success(SerialRequests.PublishOutcome.accepted(generation: 1))")
            let stored1 = try postgres.sql("SELECT credential FROM \(configuration.table)")
            #expect(stored1.hasPrefix("sealed:v1:k1:") && !stored1.contains("secret-token"), "stored: \(stored1)")
            let current = try await second.current()
            #expect(current.credential == "secret-token-t1" && current.generation == 1)
        }
    }

    @Test func aRowSealedWithAnUnknownKeyIsRefusedAndCostsNoLease() async throws {
        let postgres = try SharedPostgres.get()
        let configuration = postgres.configuration()
        let behind = try await connectCoordinator(configuration, try CredentialSealing(sealingWith: sealingKey("k1", 1)))
        let ahead = try await connectCoordinator(
            configuration, try CredentialSealing(sealingWith: sealingKey("k2", 2), alsoOpening: [sealingKey("k1", 1)]))
        try await closing([behind, ahead]) { () async throws in
            guard case .success(.lease(let lease)) = await ahead.acquireWithin(.seconds(30), replacing: 0) else {
                Issue.record("no lease")
                return
            }
            let outcome = await ahead.publishWithin(.seconds(30), "t1", under: lease)
            #expect(outcome.map { "\($0)" } == "success(SerialRequests.PublishOutcome.accepted(generation: 1))")
            // The replica without k2 meets generation 1: refused, naming the key; nothing changes.
            let answer = await behind.acquireWithin(.seconds(30), replacing: 0)
            guard case .failure(PostgresCoordinatorError.sealedWithUnknownKey(_, "k2", ["k1"])) = answer else {
                Issue.record("expected a refusal naming key k2, got \(answer?.grantDescription ?? "nothing")")
                return
            }
            #expect(try postgres.leaseColumns(configuration.table) == "1|free|1")
            // The lease protocol goes on: the holder of generation 1 takes the next lease (fence 2).
            guard case .success(.lease(let next)) = await ahead.acquireWithin(.seconds(30), replacing: 1) else {
                Issue.record("the lease on generation 1 could not be taken after the refusal")
                return
            }
            #expect(next.fence == 2)
        }
    }

    @Test func aTamperedOrReplayedRowIsRefusedAndAHolderOfItsGenerationReplacesIt() async throws {
        let postgres = try SharedPostgres.get()
        let configuration = postgres.configuration()
        let sealing = try CredentialSealing(sealingWith: sealingKey("k1", 1))
        let holder = try await connectCoordinator(configuration, sealing)
        try await closing([holder]) { () async throws in
            let table = configuration.table
            let generation0 = try postgres.sql("SELECT credential FROM \(table)")
            guard case .success(.lease(let lease)) = await holder.acquireWithin(.seconds(30), replacing: 0) else {
                Issue.record("no lease")
                return
            }
            _ = await holder.publishWithin(.seconds(30), "t1", under: lease)
            // One hex digit of the ciphertext changed.
            _ = try postgres.sql("""
                UPDATE \(table) SET credential = left(credential, -1)
                    || CASE WHEN right(credential, 1) = '0' THEN '1' ELSE '0' END
                """)
            let tampered = await refusal { try await holder.current() }
            guard case .unsealable(_, let reason)? = tampered, reason.contains("authentication failed") else {
                Issue.record("expected .unsealable, got \(String(describing: tampered))")
                return
            }
            // Generation 0's genuine sealed value written back over generation 1: bound to generation 0.
            _ = try postgres.sql("UPDATE \(table) SET credential = '\(generation0)'")
            let replayed = await refusal { try await holder.current() }
            guard case .unsealable? = replayed else {
                Issue.record("a replayed older value was accepted: \(String(describing: replayed))")
                return
            }
            // A replica behind meets the refused row: its acquire fails and takes no lease.
            let behind = await holder.acquireWithin(.seconds(30), replacing: 0)
            guard case .failure(PostgresCoordinatorError.unsealable) = behind else {
                Issue.record("expected .unsealable, got \(behind?.grantDescription ?? "nothing")")
                return
            }
            #expect(try postgres.leaseColumns(table) == "1|free|1")
            // The holder of generation 1 takes the lease and publishes a genuine credential over it.
            guard case .success(.lease(let next)) = await holder.acquireWithin(.seconds(30), replacing: 1) else {
                Issue.record("no lease on the refused row's generation")
                return
            }
            let outcome = await holder.publishWithin(.seconds(30), "t2", under: next)
            #expect(outcome.map { "\($0)" } == "success(SerialRequests.PublishOutcome.accepted(generation: 2))")
            #expect(try await holder.current().credential == "t2")
        }
    }

    @Test func aPlainRowIsRefusedByACoordinatorThatSeals() async throws {
        let postgres = try SharedPostgres.get()
        let configuration = postgres.configuration()
        let plain = try await connectCoordinator(configuration, nil, initial: "planted")
        let sealed = try await connectCoordinator(configuration, try CredentialSealing(sealingWith: sealingKey("k1", 1)))
        try await closing([plain, sealed]) { () async throws in
            let refusal = await refusal { try await sealed.current() }
            guard case .unsealable(_, let reason)? = refusal, reason.contains("not sealed") else {
                Issue.record("a plain row was accepted or refused for another reason: \(String(describing: refusal))")
                return
            }
        }
    }
}
