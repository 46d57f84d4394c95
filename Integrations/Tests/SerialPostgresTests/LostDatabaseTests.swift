import FleetSupport
import SerialPostgres
import SerialRuntime
import Synchronization
import Testing

/// A transport answering at once: 200 when the credential is the valid one, else 401; its
/// refresh makes a new valid credential.
final class InstantTokenServer: RequestTransport, Sendable {
    let valid = Mutex("t0")
    let refreshes = Mutex(0)

    func send(_ request: String, credential: String, completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        completion(.success(self.valid.withLock { $0 } == credential ? 200 : 401))
    }

    func expire() { self.valid.withLock { $0 = "expired" } }

    var policy: RequestQueue<InstantTokenServer>.Policy {
        .init(
            classify: { _, outcome in (try? outcome.get()) == 200 ? .success : .credentialExpired },
            refresh: { _, completion in
                let token = self.refreshes.withLock { count in
                    count += 1
                    return "t\(count)"
                }
                self.valid.withLock { $0 = token }
                completion(.success(token))
            })
    }
}

/// What requests do when the database goes away mid-run: those that need no refresh never touch
/// it; those parked behind a refresh fail once each with `RequestError.refreshFailed` carrying
/// the coordinator's typed error, long before the queue's own refresh timeout; once the database
/// is back, the next refresh connects again. Timeouts are generous: a refused connection fails at
/// once, and a loaded machine must not turn a slow first connection into a failure.
@Suite("PostgreSQL lost mid-run", .serialized)
struct LostDatabaseTests {
    @Test func parkedRequestsFailOnceWithTheTypedErrorAndTheNextRefreshReconnects() async throws {
        let postgres = try LocalPostgres.start()
        defer { try? postgres.stop() }
        var configuration = PostgresCredentialCoordinator<String>.Configuration(
            host: "127.0.0.1", port: postgres.port, username: postgres.username, database: postgres.database,
            name: "api", connectTimeout: .seconds(10), operationTimeout: .seconds(10))
        configuration.leaseDuration = .seconds(10)
        let coordinator = try await PostgresCredentialCoordinator<String>.connect(
            configuration, initial: "t0", codec: .string)
        let server = InstantTokenServer()
        let scheduler = SerialQueue(label: "lost-db")
        let queue = RequestQueue(
            transport: server, credential: "t0", policy: server.policy, coordinator: coordinator,
            configuration: .init(
                maximumConcurrent: 10, refreshLimit: 10, refreshTimeout: .seconds(120), agingInterval: nil),
            scheduler: scheduler)

        server.expire()
        let first = await self.outcomes(queue, count: 3)
        #expect(first.allSatisfy { $0 == "success" }, "\(first)")
        #expect(queue.credentialGeneration == 1)

        try postgres.stop(immediate: true, keepFolder: true)
        let untouched = await self.outcomes(queue, count: 3)
        #expect(untouched.allSatisfy { $0 == "success" }, "requests needing no refresh: \(untouched)")

        server.expire()
        let started = ContinuousClock.now
        let lost = await self.outcomes(queue, count: 10)
        let took = started.duration(to: .now)
        #expect(lost.count == 10)
        #expect(lost.allSatisfy { $0 == "refreshFailed(unreachable)" || $0 == "refreshFailed(timedOut)" }, "\(lost)")
        #expect(took < .seconds(60), "the parked requests failed after \(took): by the queue's refresh timeout?")
        #expect(server.refreshes.withLock { $0 } == 1, "no refresh without a lease")
        let statistics = queue.statistics
        #expect(statistics.completed == statistics.submitted, "each request completed once: \(statistics)")

        try postgres.restart()
        let back = await self.outcomes(queue, count: 3)
        #expect(back.allSatisfy { $0 == "success" }, "after the database came back: \(back)")
        #expect(queue.credentialGeneration == 2)
        queue.shutdown()
        await coordinator.close()
    }

    /// Submits `count` requests and waits (at most 10 s) for their outcomes, in words.
    private func outcomes(_ queue: RequestQueue<InstantTokenServer>, count: Int) async -> [String] {
        let results = Mutex<[String]>([])
        let done: Bool? = await bounded(.seconds(10)) { (finished: @escaping @Sendable (Bool) -> Void) in
            for index in 0..<count {
                queue.submit("r\(index)") { result in
                    let text: String
                    switch result {
                    case .success, .cached: text = "success"
                    case .failure(.refreshFailed(let error as PostgresCoordinatorError)):
                        switch error {
                        case .unreachable: text = "refreshFailed(unreachable)"
                        case .timedOut: text = "refreshFailed(timedOut)"
                        default: text = "refreshFailed(\(error))"
                        }
                    case .failure(let error): text = "\(error)"
                    }
                    if results.withLock({ $0.append(text); return $0.count }) == count { finished(true) }
                }
            }
        }
        if done == nil { Issue.record("\(count) requests did not all complete within 10 s") }
        return results.withLock { $0 }
    }
}
