import FleetSupport
import LoopbackServer
import Foundation
import SerialPostgres
import SerialRuntime
import Testing

/// One PostgreSQL cluster for the tests of this process (in a temporary folder, on 127.0.0.1),
/// started on first use and stopped when the process exits. Tests that stop a cluster start
/// their own.
enum SharedPostgres {
    static let cluster: Result<LocalPostgres, any Error> = {
        let result = Result { try LocalPostgres.start() }
        if case .success = result { atexit { if case .success(let cluster) = SharedPostgres.cluster { try? cluster.stop() } } }
        return result
    }()

    static func get() throws -> LocalPostgres { try self.cluster.get() }
}

extension LocalPostgres {
    /// A coordinator configuration for a fresh table of this cluster.
    func configuration(
        table: String = "t\(UInt32.random(in: 0...UInt32.max))", holder: String = "test", lease: Duration = .seconds(2),
        backoff: (Duration, Duration) = (.milliseconds(10), .milliseconds(200))
    ) -> PostgresCredentialCoordinator<String>.Configuration {
        .init(
            host: "127.0.0.1", port: self.port, username: self.username, database: self.database, table: table,
            name: "api", holder: holder, leaseDuration: lease, connectTimeout: .seconds(30),
            operationTimeout: .seconds(30), waitBackoff: backoff)
    }
}

extension PostgresCredentialCoordinator {
    /// `acquire` as async, bounded: fails the test (and returns nil) after `timeout`.
    func acquireWithin(
        _ timeout: Duration, replacing generation: UInt64, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Result<CredentialGrant<Credential>, any Error>? {
        let answer = await bounded(timeout) { done in self.acquire(replacing: generation, completion: done) }
        if answer == nil { Issue.record("acquire did not answer within \(timeout)", sourceLocation: sourceLocation) }
        return answer
    }

    /// `publish` as async, bounded.
    func publishWithin(
        _ timeout: Duration, _ credential: Credential, under lease: CredentialLease,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Result<PublishOutcome, any Error>? {
        let answer = await bounded(timeout) { done in self.publish(credential, under: lease, completion: done) }
        if answer == nil { Issue.record("publish did not answer within \(timeout)", sourceLocation: sourceLocation) }
        return answer
    }
}

/// A sealing key of 32 bytes `byte`, named `id`.
func sealingKey(_ id: String, _ byte: UInt8) -> CredentialSealing.Key {
    try! CredentialSealing.Key(id: id, bytes: [UInt8](repeating: byte, count: 32))
}

/// A coordinator of `String` credentials on `configuration`, sealed with `sealing` when given.
func connectCoordinator(
    _ configuration: PostgresCredentialCoordinator<String>.Configuration, _ sealing: CredentialSealing? = nil,
    initial: String = "secret-token-t0"
) async throws -> PostgresCredentialCoordinator<String> {
    try await PostgresCredentialCoordinator<String>.connect(
        configuration, initial: initial, codec: sealing.map { .string.sealed(with: $0) } ?? .string)
}

/// The error `body` throws, as a `PostgresCoordinatorError`; records an issue otherwise.
func refusal<T>(
    _ body: () async throws -> T, sourceLocation: SourceLocation = #_sourceLocation
) async -> PostgresCoordinatorError? {
    do {
        let value = try await body()
        Issue.record("not refused: \(value)", sourceLocation: sourceLocation)
    } catch let error as PostgresCoordinatorError {
        return error
    } catch {
        Issue.record("refused with another error: \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

extension LocalPostgres {
    /// `generation|holder or free|fence` of the only row of `table`.
    func leaseColumns(_ table: String) throws -> String {
        try self.sql("SELECT generation, coalesce(lease_holder, 'free'), lease_fence FROM \(table)")
    }
}

/// The value a callback API gives, or `nil` if it does not call back within `timeout`.
func bounded<T: Sendable>(
    _ timeout: Duration, _ start: (@escaping @Sendable (T) -> Void) -> Void
) async -> T? {
    let (values, sink) = AsyncStream.makeStream(of: T.self)
    start { value in
        sink.yield(value)
        sink.finish()
    }
    return await firstValue(of: values, within: timeout)
}

extension Result {
    var grantDescription: String {
        switch self {
        case .success(let value): return "\(value)"
        case .failure(let error): return "error: \(error)"
        }
    }
}

/// `body`'s result, after closing every coordinator it was given, whether it returned early,
/// threw or finished: a coordinator dropped with its connections open traps in postgres-nio's
/// debug builds, which would end the test process on the first failed expectation.
func closing<C, T>(
    _ coordinators: [PostgresCredentialCoordinator<C>], _ body: () async throws -> T
) async throws -> T {
    do {
        let value = try await body()
        for coordinator in coordinators { await coordinator.close() }
        return value
    } catch {
        for coordinator in coordinators { await coordinator.close() }
        throw error
    }
}
