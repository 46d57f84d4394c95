import Foundation
import LoopbackServer
import SerialPostgres

/// The fleet scenario: a rotating authorization server on loopback, `processes` replicas of one
/// client (each a `fleet-worker` process with `inFlight` requests in flight), the access token
/// forced to expire `expiries` times; optionally the first refresh's caller is killed (SIGKILL)
/// while it holds the lease.
public struct FleetScenario: Sendable {
    public var processes = 4
    public var requestsPerProcess = 300
    public var inFlight = 100
    /// Forced expiries of the access token: generations 0..<expiries each serve `usesPerToken` requests.
    public var expiries = 5
    public var usesPerToken = 150
    public var coordinator = FleetWorkerOptions.Coordinator.postgres
    public var leaseDuration: Duration = .seconds(10)
    /// SIGKILL the replica whose refresh reaches the server first (that refresh hangs, unanswered).
    public var killLeaseHolder = false
    /// The server answers a reused refresh token with the current pair instead of revoking
    /// (for measuring a fleet without coordination on equal terms).
    public var reuseGrace = false
    /// Access tokens last this long (each replica's policy is told, with `refreshMargin`); `nil`:
    /// they expire after `usesPerToken` uses instead, which no client can foresee.
    public var accessTokenLifetime: Duration? = nil
    /// The replicas' refresh margin ahead of the expiry, with `accessTokenLifetime`.
    public var refreshMargin: Duration = .seconds(1)
    /// The wait between two submissions of a replica (zero: all at once).
    public var pace: Duration = .zero
    /// How long the server takes to answer a refresh (it rotates at the end of the wait).
    public var rotationDelay: Duration = .zero
    /// The whole run's bound: workers still running then are killed and the run fails.
    public var timeout: Duration = .seconds(120)
    /// The coordinators' TLS: a PEM file of trust roots and the name the server's certificate
    /// carries (`PostgresTLS.verified`); `nil`: `.automatic`.
    public var postgresTLS: (trustRoots: String, serverName: String)? = nil
    /// A file holding `<key id>:<hex>` that every coordinator seals the credential with; `nil`: none.
    public var sealingKeyFile: String? = nil

    public init() {}
}

/// What a fleet run saw, counted on the server side and by each replica.
public struct FleetReport: Sendable {
    public var scenario: FleetScenario
    /// What every replica was told (its name aside): the coordinator's table, TLS and sealing key among it.
    public var options: FleetWorkerOptions
    /// The authorization server's counts.
    public var server: ServerCounts.RotationCounts
    /// The replicas' reports (a killed replica has none).
    public var workers: [FleetWorkerReport]
    /// Replicas that exited with a status other than 0 (a killed one included), with their output.
    public var failures: [String]
    /// From the kill to the first rotation after it (when a lease holder was killed).
    public var recoveredAfter: Duration?
    /// From the killed holder's refresh call (just after it took the lease) to the takeover's.
    public var takenOverAfter: Duration?
    public var elapsed: Duration

    public var submitted: Int { self.workers.reduce(0) { $0 + $1.submitted } }
    public var completedOnce: Int { self.workers.reduce(0) { $0 + $1.completedOnce } }
    public var succeeded: Int { self.workers.reduce(0) { $0 + $1.succeeded } }
    /// Requests completed per second: all replicas' requests over the longest replica's sending time.
    public var requestsPerSecond: Double {
        Double(self.completedOnce) / (self.workers.map(\.seconds).max() ?? .infinity)
    }

    /// The line other tools read (a contract): processes, rotations the server made, reuse
    /// detections, requests completed exactly once of those submitted, the coordinator, and the
    /// requests the server rejected with 401 (each one that met an expired token).
    public var contractLine: String {
        let coordinator = self.scenario.coordinator == .postgres ? "postgres" : "in-process"
        return "fleet: \(self.scenario.processes) processes, \(self.server.refreshes) refreshes, "
            + "\(self.server.reuseDetections) reuse detections, \(self.completedOnce)/\(self.submitted) completed once, "
            + "coordinator \(coordinator), \(self.server.rejected) rejected"
    }
}

public enum Fleet {
    /// The `fleet-worker` executable beside this one (the test binary or `fleet-demo`), or `FLEET_WORKER`.
    public static var workerPath: String {
        if let path = ProcessInfo.processInfo.environment["FLEET_WORKER"] { return path }
        let this = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return this.deletingLastPathComponent().appendingPathComponent("fleet-worker").path
    }

    /// Runs `scenario` against a fresh loopback server (and, for `.postgres`, a fresh table in
    /// `postgres`); returns when every replica has exited, or throws when the bound passes.
    public static func run(_ scenario: FleetScenario, postgres: LocalPostgres?) async throws -> FleetReport {
        var behaviour = ServerBehaviour()
        behaviour.accessTokenUses = Array(repeating: scenario.usesPerToken, count: scenario.expiries)
        behaviour.accessTokenLifetime = scenario.accessTokenLifetime
        // Before the server issues its first token: never later than the server's own reckoning.
        let initialExpiresAt = scenario.accessTokenLifetime.map { TokenPair.unixMilliseconds() + $0.milliseconds } ?? 0
        behaviour.hangingRefreshes = scenario.killLeaseHolder ? 1 : 0
        behaviour.reuseGrace = scenario.reuseGrace
        behaviour.rotationDelay = scenario.rotationDelay
        let server = try await LoopbackServer.start(behaviour: behaviour)
        defer { Task { await server.stop() } }
        let table = "fleet_\(UInt32.random(in: 0...UInt32.max))"
        var options = FleetWorkerOptions()
        options.server = server.baseURL
        options.coordinator = scenario.coordinator
        options.table = table
        options.requests = scenario.requestsPerProcess
        options.inFlight = scenario.inFlight
        options.initialExpiresAt = initialExpiresAt
        options.marginMilliseconds = scenario.accessTokenLifetime == nil ? 0 : Int(scenario.refreshMargin.milliseconds)
        options.paceMilliseconds = Int(scenario.pace.milliseconds)
        options.leaseMilliseconds = Int(scenario.leaseDuration.components.seconds * 1000
            + scenario.leaseDuration.components.attoseconds / 1_000_000_000_000_000)
        if scenario.coordinator == .postgres {
            guard let postgres else { throw FleetError.noPostgres }
            options.postgresPort = postgres.port
            options.postgresUser = postgres.username
            options.postgresDatabase = postgres.database
            options.postgresTrustRoots = scenario.postgresTLS?.trustRoots ?? ""
            options.postgresServerName = scenario.postgresTLS?.serverName ?? ""
            options.sealingKeyFile = scenario.sealingKeyFile ?? ""
            // Create the table and its row once, before the replicas race to.
            var initial = TokenPair.initial
            if initialExpiresAt > 0 { initial.expiresAt = initialExpiresAt }
            let setup = try await PostgresCredentialCoordinator<TokenPair>.connect(
                options.postgres, initial: initial, codec: try options.codec())
            await setup.close()
        }
        let started = ContinuousClock.now
        var workers: [(name: String, process: ChildProcess)] = []
        defer {
            for worker in workers {
                if worker.process.poll() == nil { worker.process.killNow() }
                _ = worker.process.wait()
                unlink(worker.process.outputPath)
            }
        }
        for index in 0..<scenario.processes {
            var worker = options
            worker.name = "w\(index)"
            let process = try ChildProcess(
                [self.workerPath] + worker.arguments, outputPath: "/tmp/\(table)-\(worker.name).out")
            workers.append((worker.name, process))
        }
        let deadline = started + scenario.timeout
        var killedAt: ContinuousClock.Instant? = nil
        var killed: String? = nil
        while workers.contains(where: { $0.process.poll() == nil }) {
            if ContinuousClock.now >= deadline { throw FleetError.timedOut(after: scenario.timeout) }
            if scenario.killLeaseHolder, killed == nil, let caller = server.counts.rotation.refreshCallers.first,
                let victim = workers.first(where: { $0.name == caller })
            {
                victim.process.killNow()
                killedAt = .now
                killed = caller
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = started.duration(to: .now)
        let counts = server.counts.rotation
        var reports: [FleetWorkerReport] = []
        var failures: [String] = []
        for worker in workers {
            let text = worker.process.output
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("REPORT ") }),
                let report = try? JSONDecoder().decode(FleetWorkerReport.self, from: Data(line.dropFirst(7).utf8))
            {
                reports.append(report)
            }
            let status = worker.process.wait()
            if status != 0 {
                failures.append("\(worker.name) (\(worker.name == killed ? "killed" : "status \(status)")): \(text.suffix(500))")
            }
        }
        var recovered: Duration? = nil
        var takenOver: Duration? = nil
        if let killedAt, let first = counts.refreshedAt.first(where: { $0 > killedAt }) {
            recovered = killedAt.duration(to: first)
        }
        if killedAt != nil, counts.refreshCalledAt.count >= 2 {
            takenOver = counts.refreshCalledAt[0].duration(to: counts.refreshCalledAt[1])
        }
        return FleetReport(
            scenario: scenario, options: options, server: counts, workers: reports, failures: failures, recoveredAfter: recovered,
            takenOverAfter: takenOver, elapsed: elapsed)
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        self.components.seconds * 1000 + self.components.attoseconds / 1_000_000_000_000_000
    }
}

/// Why a fleet run did not finish.
public enum FleetError: Error, CustomStringConvertible {
    case noPostgres
    case timedOut(after: Duration)

    public var description: String {
        switch self {
        case .noPostgres: return "the postgres coordinator needs a LocalPostgres"
        case .timedOut(let after): return "the fleet's replicas did not all exit within \(after); they were killed"
        }
    }
}
