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
