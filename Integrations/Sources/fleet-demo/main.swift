import ArgumentParser
import FleetSupport
import Foundation

// The fleet, end to end, in one command: a PostgreSQL cluster in a temporary folder (127.0.0.1),
// the rotating authorization server, four replicas with 100 requests in flight each and five
// forced expiries, once with the PostgreSQL coordinator and once with each replica on its own.
// `swift run fleet-demo` (PostgreSQL 15 installed: apt-get install -y postgresql-15).

// `fleet-demo --measure N`: instead, the costs: a refresh's added latency through PostgreSQL, and
// requests/s of the fleet with the PostgreSQL coordinator and with in-process ones (the server
// then answers a reused refresh token instead of revoking, so that both runs serve every
// request), N runs each, alternating.

/// The command line: `fleet-demo` or `fleet-demo --measure [N]`; `--help` generated.
struct FleetDemo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet-demo",
        abstract: "The fleet, end to end: four replicas sharing one credential refresh through PostgreSQL.",
        discussion: """
            Starts a PostgreSQL cluster in a temporary folder on 127.0.0.1 (PostgreSQL 15 installed), \
            the rotating authorization server and the replicas; once with the PostgreSQL coordinator, \
            once with each replica on its own. With --measure: the costs instead, N runs each.
            """)

    @Flag(help: "Measure a refresh's added latency and the fleet's requests/s instead of the scenario.")
    var measure = false

    @Argument(help: "Runs of each coordinator with --measure.")
    var runs: Int?

    func validate() throws {
        if let runs = self.runs {
            guard self.measure else { throw ValidationError("a run count (\(runs)) is given only after --measure") }
            guard runs >= 1 else { throw ValidationError("--measure needs a whole number of runs of at least 1, got \(runs)") }
        }
    }
}
let command = FleetDemo.parseOrExit()

let postgres = try LocalPostgres.start()
print("PostgreSQL on 127.0.0.1:\(postgres.port), cluster in \(postgres.directory)")
var failed = false
if command.measure {
    let runs = command.runs ?? 5
    do {
        print(try await FleetMeasurements.refreshOverhead(postgres: postgres, cycles: 200))
        var rates: [FleetWorkerOptions.Coordinator: [Double]] = [:]
        for _ in 0..<runs {
            for coordinator in [FleetWorkerOptions.Coordinator.postgres, .inProcess] {
                var scenario = FleetScenario()
                scenario.coordinator = coordinator
                scenario.requestsPerProcess = 2_000
                scenario.usesPerToken = 1_000
                scenario.reuseGrace = true
                let report = try await Fleet.run(scenario, postgres: postgres)
                rates[coordinator, default: []].append(report.requestsPerSecond)
                print("  \(report.contractLine); \(Int(report.requestsPerSecond)) requests/s; "
                    + "\(report.server.refreshCalls) refresh calls, \(report.server.graceAnswers) answered by grace")
            }
        }
        for (coordinator, values) in rates.sorted(by: { $0.key.rawValue > $1.key.rawValue }) {
            let sorted = values.sorted()
            print("fleet requests/s, coordinator \(coordinator.rawValue): median \(Int(sorted[sorted.count / 2])) of \(runs) runs "
                + "(\(sorted.map { String(Int($0)) }.joined(separator: ", ")))")
        }
    } catch {
        print("fleet-demo --measure failed: \(error)")
        failed = true
    }
    try postgres.stop()
    exit(failed ? 1 : 0)
}
do {
    for coordinator in [FleetWorkerOptions.Coordinator.postgres, .inProcess] {
        var scenario = FleetScenario()
        scenario.coordinator = coordinator
        let report = try await Fleet.run(scenario, postgres: postgres)
        print(report.contractLine)
        print("  \(report.succeeded) succeeded in \(report.elapsed); per replica: "
            + report.workers.map { "\($0.name) \($0.refreshesStarted) refreshes (\($0.credentialsAdopted) adopted)" }
                .joined(separator: ", "))
        if let error = report.workers.compactMap(\.firstError).first { print("  first failure: \(error)") }
    }
} catch {
    print("fleet-demo failed: \(error)")
    failed = true
}
try postgres.stop()
exit(failed ? 1 : 0)
