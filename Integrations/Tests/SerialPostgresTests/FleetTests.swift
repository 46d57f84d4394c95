import FleetSupport
import Foundation
import LoopbackServer
import SerialPostgres
import Testing

/// The fleet (issue 25, item 3): four `fleet-worker` processes, 100 requests in flight each,
/// against the rotating authorization server on 127.0.0.1, the access token forced to expire 5
/// times. Counts are the server's. Prints the contract line once per coordinator.
@Suite("Fleet of four processes against a rotating authorization server", .serialized)
struct FleetTests {
    @Test func withThePostgresCoordinatorTheServerSeesOneRefreshPerExpiryAndNoReuse() async throws {
        let postgres = try SharedPostgres.get()
        let report = try await Fleet.run(FleetScenario(), postgres: postgres)
        print(report.contractLine)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.server.refreshes == 5, "rotations: \(report.server.refreshes)")
        #expect(report.server.refreshCalls == 5, "refresh calls: \(report.server.refreshCalls)")
        #expect(report.server.reuseDetections == 0)
        #expect(report.workers.count == 4)
        #expect(report.submitted == 1200 && report.completedOnce == 1200)
        #expect(report.workers.allSatisfy { $0.completedMoreThanOnce == 0 })
        // Server side: every request answered 200 exactly once.
        #expect(report.server.answeredByID.count == 1200)
        #expect(report.server.answeredByID.values.allSatisfy { $0 == 1 })
    }

    @Test func withInProcessCoordinatorsTheReplicasReuseTheRefreshToken() async throws {
        var scenario = FleetScenario()
        scenario.coordinator = .inProcess
        let report = try await Fleet.run(scenario, postgres: nil)
        print(report.contractLine)
        #expect(report.server.reuseDetections >= 1, "each replica refreshed with the same refresh token")
        #expect(report.server.revoked)
        // Still exactly one completion per request: those the revoked family could not serve failed once.
        #expect(report.submitted == 1200 && report.completedOnce == 1200)
        #expect(report.workers.allSatisfy { $0.completedMoreThanOnce == 0 })
    }

    /// Issue 40, item 5: access tokens that last 2 s, each replica's policy told so (margin 1 s),
    /// requests paced over about 5 s: the fleet refreshes ahead of expiry, once per generation
    /// (one `POST /oauth/token` per rotation, no reuse), and no request meets a 401.
    static var knownLifetime: FleetScenario {
        var scenario = FleetScenario()
        scenario.requestsPerProcess = 200
        scenario.inFlight = 10
        scenario.pace = .milliseconds(25)
        scenario.accessTokenLifetime = .seconds(2)
        scenario.refreshMargin = .seconds(1)
        return scenario
    }

    /// What `knownLifetime` promises: refreshed ahead, once per generation, no request rejected.
    private func expectRefreshedAheadOncePerGeneration(
        _ report: FleetReport, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(report.failures.isEmpty, "\(report.failures)", sourceLocation: sourceLocation)
        #expect(report.server.rejected == 0, "requests that met an expired token", sourceLocation: sourceLocation)
        #expect(report.server.refreshes >= 2, "rotations: \(report.server.refreshes)", sourceLocation: sourceLocation)
        #expect(report.server.refreshCalls == report.server.refreshes, "refresh calls: \(report.server.refreshCalls)",
                sourceLocation: sourceLocation)
        #expect(report.server.reuseDetections == 0, sourceLocation: sourceLocation)
        #expect(report.submitted == 800 && report.completedOnce == 800, sourceLocation: sourceLocation)
        #expect(report.workers.allSatisfy { $0.completedMoreThanOnce == 0 }, sourceLocation: sourceLocation)
        let ahead = report.workers.reduce(0) { $0 + $1.refreshesAhead }
        let adopted = report.workers.reduce(0) { $0 + $1.credentialsAdopted }
        print("fleet-lifetime: \(ahead) refreshes ahead of expiry across the replicas, \(adopted) adopted")
    }

    @Test func withAKnownLifetimeTheFleetRefreshesAheadOncePerGenerationAndNoRequestIsRejected() async throws {
        let report = try await Fleet.run(Self.knownLifetime, postgres: try SharedPostgres.get())
        print(report.contractLine + " (lifetime known)")
        self.expectRefreshedAheadOncePerGeneration(report)
    }

    /// Issue 40, "done when": the same fleet, its coordinators (four processes) connected to a
    /// cluster that admits TLS only, verified against the test's own authority, the credential
    /// sealed with a key from a file: refreshed ahead once per generation, none rejected, and
    /// the row holds the key's id and hex only (the tokens `a<g> r<g> <expiry>` have a space and
    /// an `r`), which opens with the key to the server's last pair.
    @Test func overVerifiedTLSWithTheCredentialSealedTheFleetRefreshesAheadOncePerGeneration() async throws {
        let (postgres, certificates) = try SharedTLSPostgres.get()
        let keyFile = "\(certificates.directory)/fleet-\(UInt32.random(in: 0...UInt32.max)).key"
        try FleetSealingKey.write(id: "fleet-k1", bytes: (0..<32).map { UInt8($0 * 37 % 256) }, to: keyFile)
        defer { unlink(keyFile) }
        var scenario = Self.knownLifetime
        scenario.postgresTLS = (trustRoots: certificates.authority, serverName: "localhost")
        scenario.sealingKeyFile = keyFile
        let report = try await Fleet.run(scenario, postgres: postgres)
        print(report.contractLine + " (lifetime known, TLS verified, sealed)")
        self.expectRefreshedAheadOncePerGeneration(report)

        let stored = try postgres.sql("SELECT credential FROM \(report.options.table)")
        let prefix = "sealed:v1:fleet-k1:"
        #expect(stored.hasPrefix(prefix) && stored.dropFirst(prefix.count).allSatisfy(\.isHexDigit)
                && stored.count > prefix.count, "the stored row: \(stored)")
        // A replica with the key, over TLS, reads the server's last pair from it.
        let reader = try await PostgresCredentialCoordinator<TokenPair>.connect(
            report.options.postgres, initial: .initial, codec: try report.options.codec())
        try await closing([reader]) { () async throws in
            let (pair, generation) = try await reader.current()
            let last = report.server.refreshes
            #expect(generation == UInt64(last) && pair.access == "a\(last)" && pair.refresh == "r\(last)",
                    "stored generation \(generation): \(pair); the server rotated \(last) times")
        }
    }

    /// A replica whose requests all end while its refresh ahead of expiry is out: the server
    /// rotates the pair only after the replica has shut its queue down. The replica waits for the
    /// refresh to settle (`RequestQueue.refreshSettled(within:)`) before closing its HTTP client
    /// and coordinator, so the table holds the pair the server issued. Cut off instead, the
    /// rotated pair died with the process and the next holder refreshed with a spent token (CI,
    /// 2026-11-29: 2 reuse detections and a rejected request in the TLS fleet).
    @Test func aReplicaEndingWhileItsRefreshIsOutPublishesItBeforeItExits() async throws {
        let postgres = try SharedPostgres.get()
        var scenario = FleetScenario()
        scenario.processes = 1
        scenario.requestsPerProcess = 5
        scenario.inFlight = 5
        scenario.accessTokenLifetime = .seconds(30)
        scenario.refreshMargin = .seconds(60)  // stale from the start: the first send starts the refresh
        scenario.rotationDelay = .seconds(1)  // the requests end long before the server rotates
        let report = try await Fleet.run(scenario, postgres: postgres)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.submitted == 5 && report.completedOnce == 5)
        #expect(report.server.refreshes == 1, "rotations: \(report.server.refreshes)")
        let reader = try await PostgresCredentialCoordinator<TokenPair>.connect(
            report.options.postgres, initial: .initial, codec: try report.options.codec())
        try await closing([reader]) { () async throws in
            let (pair, generation) = try await reader.current()
            #expect(generation == 1 && pair.access == "a1" && pair.refresh == "r1",
                    "stored generation \(generation): \(pair); the server rotated once, after the replica's requests ended")
        }
    }

    @Test func aLeaseHolderKilledMidRefreshIsTakenOverWithinTheLeasePlusABound() async throws {
        let postgres = try SharedPostgres.get()
        var scenario = FleetScenario()
        scenario.killLeaseHolder = true
        scenario.leaseDuration = .seconds(6)  // its half dwarfs the holder's delay before its call
        let report = try await Fleet.run(scenario, postgres: postgres)
        let recovered = try #require(report.recoveredAfter, "no rotation after the kill")
        let takenOver = try #require(report.takenOverAfter)
        // Bound: the lease, plus one backoff step (200 ms) and a refresh round trip: quiet, well under
        // a second past the lease; the margin is generous so that a loaded machine passes too.
        let bound = scenario.leaseDuration + .seconds(10)
        print("fleet-kill: lease holder killed mid-refresh, next refresh \(recovered) after the kill, "
            + "\(takenOver) after the killed holder's "
            + "(lease \(scenario.leaseDuration), bound \(bound)); "
            + "\(report.completedOnce)/\(report.submitted) completed once by the 3 survivors")
        // Not before the lease ran out. The killed holder's call reached the server some time after
        // it took the lease (a hop to its queue, a new HTTP connection: 340 ms to over 1 s seen under
        // load), so only half the lease is asserted; without the lease the takeover came after 20 ms.
        #expect(takenOver >= scenario.leaseDuration / 2, "taken over \(takenOver) after: within the lease")
        #expect(recovered <= bound)
        #expect(report.failures.count == 1 && report.failures[0].contains("killed"), "\(report.failures)")
        #expect(report.server.refreshes == 5 && report.server.reuseDetections == 0)
        #expect(report.workers.count == 3 && report.completedOnce == report.submitted && report.submitted == 900)
    }
}
