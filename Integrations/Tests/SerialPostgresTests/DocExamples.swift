import SerialHTTPClient
import SerialPostgres
import SerialRuntime

/// The doc comment's example of `PostgresCredentialCoordinator`, compiled (not run: it needs a
/// database at 5432).
func postgresCoordinatorDocExample(api: InstantTokenServer, policy: RequestQueue<InstantTokenServer>.Policy) async throws {
    // example: PostgresCredentialCoordinator
    let coordinator = try await PostgresCredentialCoordinator<String>.connect(
        .init(host: "127.0.0.1", port: 5432, username: "app", database: "app", name: "billing-api"),
        initial: "t0", codec: .string)
    let (token, generation) = try await coordinator.current()
    let queue = RequestQueue(
        transport: api, credential: token, credentialGeneration: generation, policy: policy,
        coordinator: coordinator, scheduler: SerialQueue(label: "api"))
    // end example
    queue.shutdown()
}

/// The README's example, compiled (not run).
func readmeFleetExample(
    transport: HTTPClientTransport, policy: RequestQueue<HTTPClientTransport>.Policy, replica: Int
) async throws {
    // example: fleet replica
    let coordinator = try await PostgresCredentialCoordinator<BearerToken>.connect(
        .init(host: "127.0.0.1", port: 5432, username: "app", database: "app", name: "billing-api",
              holder: "replica-\(replica)", leaseDuration: .seconds(10)),
        initial: BearerToken("t0"),
        codec: .init(encode: { $0.value }, decode: { BearerToken($0) }))
    let (token, generation) = try await coordinator.current()        // what the fleet uses now
    let queue = RequestQueue(
        transport: transport, credential: token, credentialGeneration: generation, policy: policy,
        coordinator: coordinator, scheduler: SerialQueue(label: "api"))
    // end example
    queue.shutdown()
}

/// `CredentialSealing`'s doc comment example, compiled (not run).
func credentialSealingDocExample(
    configuration: PostgresCredentialCoordinator<String>.Configuration, currentKey: [UInt8], previousKey: [UInt8]
) async throws {
    // example: CredentialSealing
    let sealing = try CredentialSealing(
        sealingWith: .init(id: "2026-11", bytes: currentKey),      // 32 bytes, from your secret store
        alsoOpening: [.init(id: "2026-10", bytes: previousKey)])    // rows sealed before the rotation
    let coordinator = try await PostgresCredentialCoordinator<String>.connect(
        configuration, initial: "t0", codec: .string.sealed(with: sealing))
    // end example
    await coordinator.close()
}

/// The SerialPostgres article's example: a database outside loopback, over verified TLS, with the
/// row sealed. Compiled, not run.
func postgresSecurityArticleExample(sealing: CredentialSealing) async throws {
    // example: SerialPostgres security
    let coordinator = try await PostgresCredentialCoordinator<String>.connect(
        .init(host: "db.internal", username: "billing_refresher", database: "app", name: "billing-api",
              tls: .verified(trustRoots: .pemFile(path: "/etc/ssl/certs/private-ca.pem"))),
        initial: "t0", codec: .string.sealed(with: sealing))
    // end example
    await coordinator.close()
}
