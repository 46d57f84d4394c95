import ArgumentParser
import FleetSupport
import Foundation

// One replica of the fleet (started by the fleet test or fleet-demo): see FleetWorker.

/// The command line `FleetWorkerOptions.arguments` writes: every key checked, `--help` generated.
struct FleetWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet-worker",
        abstract: "One replica of the fleet: a RequestQueue with requests in flight against the auth server.",
        discussion: "Started by the fleet test and fleet-demo; prints one line REPORT <json> at the end.")

    @Option(help: "This replica's name (the coordinator's lease holder).")
    var name = FleetWorkerOptions().name
    @Option(help: "The authorization server's base URL.")
    var server = FleetWorkerOptions().server
    @Option(help: "The credential coordinator.")
    var coordinator = FleetWorkerOptions().coordinator
    @Option(help: "PostgreSQL's port on 127.0.0.1.")
    var postgresPort = FleetWorkerOptions().postgresPort
    @Option(help: "PostgreSQL's user.")
    var postgresUser = FleetWorkerOptions().postgresUser
    @Option(help: "PostgreSQL's database.")
    var postgresDatabase = FleetWorkerOptions().postgresDatabase
    @Option(help: "The coordinator's table.")
    var table = FleetWorkerOptions().table
    @Option(help: "Requests to send.")
    var requests = FleetWorkerOptions().requests
    @Option(help: "Requests in flight.")
    var inFlight = FleetWorkerOptions().inFlight
    @Option(name: .customLong("lease-ms"), help: "The coordinator's lease, in milliseconds.")
    var leaseMilliseconds = FleetWorkerOptions().leaseMilliseconds
    @Option(name: .customLong("timeout-s"), help: "Seconds before the replica gives up.")
    var timeoutSeconds = FleetWorkerOptions().timeoutSeconds
    @Option(name: .customLong("margin-ms"), help: "The refresh margin ahead of expiry, in milliseconds; 0: expiry not known.")
    var marginMilliseconds = FleetWorkerOptions().marginMilliseconds
    @Option(name: .customLong("initial-expires-at"), help: "The first access token's expiry, Unix milliseconds; 0: none.")
    var initialExpiresAt = FleetWorkerOptions().initialExpiresAt
    @Option(name: .customLong("pace-ms"), help: "Milliseconds between submissions; 0: all at once.")
    var paceMilliseconds = FleetWorkerOptions().paceMilliseconds
    @Option(help: "A PEM file of trust roots: PostgreSQL over TLS verified against it; empty: automatic.")
    var postgresTrustRoots = FleetWorkerOptions().postgresTrustRoots
    @Option(help: "The name PostgreSQL's certificate carries, with --postgres-trust-roots; empty: the host.")
    var postgresServerName = FleetWorkerOptions().postgresServerName
    @Option(help: "A file holding <key id>:<hex>: the stored credential is sealed with it; empty: not sealed.")
    var sealingKeyFile = FleetWorkerOptions().sealingKeyFile

    func validate() throws {
        guard (1...65_535).contains(self.postgresPort) else {
            throw ValidationError("--postgres-port must be a port between 1 and 65535, got \(self.postgresPort)")
        }
        for (flag, value) in [
            ("--requests", self.requests), ("--in-flight", self.inFlight), ("--lease-ms", self.leaseMilliseconds),
            ("--timeout-s", self.timeoutSeconds),
        ] where value < 1 {
            throw ValidationError("\(flag) needs a whole number of at least 1, got \(value)")
        }
        for (flag, value) in [("--margin-ms", self.marginMilliseconds), ("--pace-ms", self.paceMilliseconds)]
        where value < 0 {
            throw ValidationError("\(flag) needs a whole number of at least 0, got \(value)")
        }
        guard self.server.hasPrefix("http://") || self.server.hasPrefix("https://") else {
            throw ValidationError("--server must be an http:// or https:// URL, got \"\(self.server)\"")
        }
        guard !self.name.isEmpty else { throw ValidationError("--name must not be empty") }
    }

    var options: FleetWorkerOptions {
        var options = FleetWorkerOptions()
        options.name = self.name
        options.server = self.server
        options.coordinator = self.coordinator
        options.postgresPort = self.postgresPort
        options.postgresUser = self.postgresUser
        options.postgresDatabase = self.postgresDatabase
        options.table = self.table
        options.requests = self.requests
        options.inFlight = self.inFlight
        options.leaseMilliseconds = self.leaseMilliseconds
        options.timeoutSeconds = self.timeoutSeconds
        options.marginMilliseconds = self.marginMilliseconds
        options.initialExpiresAt = self.initialExpiresAt
        options.paceMilliseconds = self.paceMilliseconds
        options.postgresTrustRoots = self.postgresTrustRoots
        options.postgresServerName = self.postgresServerName
        options.sealingKeyFile = self.sealingKeyFile
        return options
    }
}

extension FleetWorkerOptions.Coordinator: ExpressibleByArgument {
    public static var allValueStrings: [String] { [Self.postgres.rawValue, Self.inProcess.rawValue] }
}

exit(await FleetWorker.main(FleetWorkerCommand.parseOrExit().options))
