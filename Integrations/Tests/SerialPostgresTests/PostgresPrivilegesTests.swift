import FleetSupport
import SerialPostgres
import SerialRuntime
import Testing

/// The privileges the article's "Privileges" section names are enough: SELECT, INSERT and UPDATE
/// on a table its owner made, and nothing else.
@Suite("PostgresCredentialCoordinator's privileges")
struct PostgresPrivilegesTests {
    @Test func aRoleWithSelectInsertUpdateOnATableItsOwnerMadeRunsTheWholeProtocol() async throws {
        let postgres = try SharedPostgres.get()
        let owned = postgres.configuration()
        let owner = try await PostgresCredentialCoordinator<String>.connect(owned, initial: "t0", codec: .string)
        await owner.close()
        let role = "app_\(UInt32.random(in: 0...UInt32.max))"
        _ = try postgres.sql("CREATE ROLE \(role) LOGIN; GRANT SELECT, INSERT, UPDATE ON \(owned.table) TO \(role)")
        #expect(try postgres.sql("SELECT has_schema_privilege('\(role)', 'public', 'CREATE')") == "f")
        var limited = owned
        limited.username = role
        let replica = try await PostgresCredentialCoordinator<String>.connect(limited, initial: "t0", codec: .string)
        try await closing([replica]) { () async throws in
            guard case .success(.lease(let lease)) = await replica.acquireWithin(.seconds(30), replacing: 0) else {
                Issue.record("the limited role got no lease")
                return
            }
            let outcome = await replica.publishWithin(.seconds(30), "t1", under: lease)
            #expect(outcome.map { "\($0)" } == "success(SerialRequests.PublishOutcome.accepted(generation: 1))")
            let current = try await replica.current()
            #expect(current.credential == "t1" && current.generation == 1)
        }
    }

    @Test func aRoleThatMayNotCreateTheMissingTableIsRefusedWithTheServersReason() async throws {
        let postgres = try SharedPostgres.get()
        let role = "app_\(UInt32.random(in: 0...UInt32.max))"
        _ = try postgres.sql("CREATE ROLE \(role) LOGIN")
        var configuration = postgres.configuration()
        configuration.username = role
        do {
            let coordinator = try await PostgresCredentialCoordinator<String>.connect(
                configuration, initial: "t0", codec: .string)
            await coordinator.close()
            Issue.record("connected without a table and without the right to create it")
        } catch PostgresCoordinatorError.statementFailed(let operation, let reason) {
            #expect(operation == "create table" && reason.contains("permission denied"), "\(operation): \(reason)")
        }
    }
}
