import AsyncHTTPClient
import Foundation
import LoopbackServer
import SerialHTTPClient
import SerialPostgres
import SerialRuntime
import Synchronization

/// What one replica of the fleet is told, as command-line arguments (`--key value`, parsed by the
/// `fleet-worker` executable).
public struct FleetWorkerOptions: Sendable, Codable {
    /// Which coordinator the fleet uses.
    public enum Coordinator: String, Sendable, Codable {
        case postgres, inProcess = "in-process"
    }

    public var name = "w0"
    public var server = "http://127.0.0.1:8080"
    public var coordinator = Coordinator.postgres
    public var postgresPort = 5432
    public var postgresUser = "fleet"
    public var postgresDatabase = "postgres"
    public var table = "serial_credentials"
    public var requests = 300
    public var inFlight = 100
    public var leaseMilliseconds = 2_000
    public var timeoutSeconds = 60
    /// The refresh margin the replica's policy uses; 0: it is not told when tokens expire.
    public var marginMilliseconds = 0
    /// The first access token's expiry (Unix milliseconds), when tokens expire; 0: none.
    public var initialExpiresAt: Int64 = 0
    /// The wait between two submissions; 0: all at once.
    public var paceMilliseconds = 0
    /// A PEM file of trust roots: the coordinator's connections use TLS verified against it
    /// (`PostgresTLS.verified`); empty: `.automatic` (unencrypted on loopback).
    public var postgresTrustRoots = ""
    /// The name the server's certificate must carry, with `postgresTrustRoots`; empty: the host.
    public var postgresServerName = ""
    /// A file holding `<key id>:<64 hex digits>`: the stored credential is sealed with that key
    /// (`CredentialSealing`); empty: stored as text.
    public var sealingKeyFile = ""

    public init() {}

    /// As arguments for the `fleet-worker` executable.
    public var arguments: [String] {
        ["--name", self.name, "--server", self.server, "--coordinator", self.coordinator.rawValue,
         "--postgres-port", "\(self.postgresPort)", "--postgres-user", self.postgresUser,
         "--postgres-database", self.postgresDatabase, "--table", self.table, "--requests", "\(self.requests)",
         "--in-flight", "\(self.inFlight)", "--lease-ms", "\(self.leaseMilliseconds)",
         "--timeout-s", "\(self.timeoutSeconds)", "--margin-ms", "\(self.marginMilliseconds)",
         "--initial-expires-at", "\(self.initialExpiresAt)", "--pace-ms", "\(self.paceMilliseconds)",
         "--postgres-trust-roots", self.postgresTrustRoots, "--postgres-server-name", self.postgresServerName,
         "--sealing-key-file", self.sealingKeyFile]
    }

    /// The coordinator's configuration for this replica.
    public var postgres: PostgresCredentialCoordinator<TokenPair>.Configuration {
        .init(
            host: "127.0.0.1", port: self.postgresPort, username: self.postgresUser, database: self.postgresDatabase,
            table: self.table, name: "fleet-api", holder: self.name,
            leaseDuration: .milliseconds(self.leaseMilliseconds),
            tls: self.postgresTrustRoots.isEmpty
                ? .automatic
                : .verified(
                    trustRoots: .pemFile(path: self.postgresTrustRoots),
                    serverName: self.postgresServerName.isEmpty ? nil : self.postgresServerName))
    }

    /// How the replica stores the credential: as text, or sealed with the key in `sealingKeyFile`.
    public func codec() throws -> PostgresCredentialCoordinator<TokenPair>.Codec {
        guard !self.sealingKeyFile.isEmpty else { return .tokenPair }
        return .tokenPair.sealed(with: try CredentialSealing(sealingWith: try FleetSealingKey.read(self.sealingKeyFile)))
    }
}

/// What one replica did, printed as one JSON line after `REPORT `.
public struct FleetWorkerReport: Sendable, Codable {
    public var name: String
    public var submitted: Int
    /// Requests whose completion ran exactly once.
    public var completedOnce: Int
    /// Requests whose completion ran more than once (must be 0).
    public var completedMoreThanOnce: Int
    public var succeeded: Int
    public var failed: Int
    /// The queue's refreshes, and of them those that adopted another replica's credential.
    public var refreshesStarted: Int
    public var credentialsAdopted: Int
    /// Of them, those started ahead of expiry (known lifetime).
    public var refreshesAhead: Int
    public var seconds: Double
    /// The first failure's description, if any.
    public var firstError: String?
}

/// One replica: a `RequestQueue` over AsyncHTTPClient sending `GET /api/<name>-<i>` with
/// `inFlight` requests in flight, refreshing through the chosen coordinator; prints its report.
public enum FleetWorker {
    /// Runs the replica; the process's exit status (0: every request completed exactly once).
    public static func main(_ options: FleetWorkerOptions) async -> Int32 {
        do {
            let report = try await self.run(options)
            let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
            print("REPORT \(json)")
            return report.completedOnce == report.submitted ? 0 : 1
        } catch {
            print("ERROR \(options.name): \(error)")
            return 2
        }
    }

    static func run(_ options: FleetWorkerOptions) async throws -> FleetWorkerReport {
        let scheduler = SerialQueue(label: "fleet-\(options.name)")
        var postgres: PostgresCredentialCoordinator<TokenPair>? = nil
        let coordinator: any CredentialCoordinator<TokenPair>
        var initial = TokenPair.initial
        if options.initialExpiresAt > 0 { initial.expiresAt = options.initialExpiresAt }
        var start = (credential: initial, generation: UInt64(0))
        switch options.coordinator {
        case .postgres:
            let connected = try await PostgresCredentialCoordinator<TokenPair>.connect(
                options.postgres, initial: initial, codec: try options.codec())
            start = try await connected.current()
            postgres = connected
            coordinator = connected
        case .inProcess:
            coordinator = LocalCredentialCoordinator<TokenPair>(
                scheduler: scheduler, leaseDuration: .milliseconds(options.leaseMilliseconds))
        }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
        let report = try await HTTPClientTransport.withTransport(configuration: configuration) { http in
            let transport = FleetTransport(http: http)
            let policy = RequestQueue<FleetTransport>.Policy(
                classify: HTTPClientTransport.classify,
                refresh: { expired, completion in
                    transport.refresh(expired, server: options.server, worker: options.name, completion: completion)
                },
                lifetime: options.marginMilliseconds > 0
                    ? .init(refreshMargin: .milliseconds(options.marginMilliseconds), retryInterval: .milliseconds(200)) {
                        pair in pair.expiresAt.map { expiry in
                            // The server's wall clock on the queue's monotonic one, 250 ms early
                            // for the skew of a request on its way.
                            scheduler.now + .milliseconds(expiry - TokenPair.unixMilliseconds() - 250)
                        }
                    } : nil)
            let queue = RequestQueue(
                transport: transport, credential: start.credential, credentialGeneration: start.generation,
                policy: policy, coordinator: coordinator,
                configuration: .init(
                    maximumConcurrent: options.inFlight, maximumRetries: 2, maximumRedirects: 10, refreshLimit: 10,
                    refreshWindow: .seconds(60), refreshTimeout: .seconds(20), agingInterval: nil),
                scheduler: scheduler)
            let report = await self.send(options, through: queue)
            queue.shutdown()
            // A refresh ahead of expiry may be out: the server may have rotated already, so its
            // pair must reach the table before the HTTP client and the coordinator close (cut
            // off, the next holder would refresh with a spent token: a reuse detection).
            if !(await queue.refreshSettled(within: .seconds(25))) {
                print("WARNING \(options.name): a refresh still out after 25 seconds")
            }
            return report
        }
        await postgres?.close()
        return report
    }

    /// Submits every request at once (the queue keeps `inFlight` of them in flight) and waits
    /// for their completions, at most `timeoutSeconds`.
    static func send(_ options: FleetWorkerOptions, through queue: RequestQueue<FleetTransport>) async
        -> FleetWorkerReport
    {
        let started = ContinuousClock.now
        let completions = Mutex((counts: [Int](repeating: 0, count: options.requests), ended: 0,
                                 succeeded: 0, firstError: String?.none))
        let (done, doneSink) = AsyncStream.makeStream(of: Void.self)
        for index in 0..<options.requests {
            let request = HTTPRequest(url: "\(options.server)/api/\(options.name)-\(index)", attemptTimeout: .seconds(10))
            if options.paceMilliseconds > 0 && index > 0 { try? await Task.sleep(for: .milliseconds(options.paceMilliseconds)) }
            queue.submit(request, timeout: .seconds(Int64(options.timeoutSeconds))) { result in
                let finished = completions.withLock { state -> Bool in
                    state.counts[index] += 1
                    if state.counts[index] == 1 { state.ended += 1 }
                    switch result {
                    case .success, .cached: state.succeeded += 1
                    case .failure(let error): if state.firstError == nil { state.firstError = "\(error)" }
                    }
                    return state.ended == options.requests
                }
                if finished { doneSink.yield() }
            }
        }
        _ = await firstValue(of: done, within: .seconds(options.timeoutSeconds + 5))
        let statistics = queue.statistics
        return completions.withLock { state in
            FleetWorkerReport(
                name: options.name, submitted: options.requests,
                completedOnce: state.counts.count { $0 == 1 }, completedMoreThanOnce: state.counts.count { $0 > 1 },
                succeeded: state.succeeded, failed: state.ended - state.succeeded,
                refreshesStarted: statistics.refreshesStarted, credentialsAdopted: statistics.credentialsAdopted,
                refreshesAhead: statistics.refreshesAhead,
                seconds: Double((ContinuousClock.now - started).components.attoseconds) / 1e18
                    + Double((ContinuousClock.now - started).components.seconds),
                firstError: state.firstError)
        }
    }
}
