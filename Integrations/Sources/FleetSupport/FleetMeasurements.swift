import Foundation
import SerialPostgres
import SerialRuntime

/// The costs of coordinating through PostgreSQL: a refresh's added latency (lease + publish,
/// without the refresh call itself), and the fleet's requests per second with and without it.
public enum FleetMeasurements {
    /// Medians and 90th percentiles of `cycles` lease-and-publish cycles, in milliseconds, for the
    /// in-process coordinator and for PostgreSQL.
    public static func refreshOverhead(postgres: LocalPostgres, cycles: Int) async throws -> String {
        let scheduler = SerialQueue(label: "measure")
        let local = LocalCredentialCoordinator<TokenPair>(scheduler: scheduler, leaseDuration: .seconds(10))
        let localTimes = try await self.cycles(cycles, local)
        var options = FleetWorkerOptions()
        options.postgresPort = postgres.port
        options.postgresUser = postgres.username
        options.postgresDatabase = postgres.database
        options.table = "measure_\(UInt32.random(in: 0...UInt32.max))"
        let remote = try await PostgresCredentialCoordinator<TokenPair>.connect(
            options.postgres, initial: .initial, codec: .tokenPair)
        let remoteTimes = try await self.cycles(cycles, remote)
        await remote.close()
        func summary(_ times: [Duration]) -> String {
            let sorted = times.sorted()
            let ms = { (d: Duration) in String(format: "%.3f", Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000) }
            return "median \(ms(sorted[sorted.count / 2])) ms, p90 \(ms(sorted[sorted.count * 9 / 10])) ms"
        }
        return "refresh overhead (acquire a lease + publish, \(cycles) cycles): in-process \(summary(localTimes)); "
            + "PostgreSQL \(summary(remoteTimes))"
    }

    private static func cycles(
        _ count: Int, _ coordinator: some CredentialCoordinator<TokenPair>
    ) async throws -> [Duration] {
        var times: [Duration] = []
        var generation: UInt64 = 0
        for index in 0..<count {
            let started = ContinuousClock.now
            let grant = try await withCheckedThrowingContinuation { continuation in
                coordinator.acquire(replacing: generation) { continuation.resume(with: $0) }
            }
            guard case .lease(let lease) = grant else { throw FleetError.timedOut(after: .zero) }
            let pair = TokenPair(access: "a\(index + 1)", refresh: "r\(index + 1)")
            let outcome = try await withCheckedThrowingContinuation { continuation in
                coordinator.publish(pair, under: lease) { continuation.resume(with: $0) }
            }
            guard case .accepted(let next) = outcome else { throw FleetError.timedOut(after: .zero) }
            generation = next
            times.append(started.duration(to: .now))
        }
        return times
    }
}
