#if SERIAL_SIMULATION
import SerialCore
import SerialRuntime
import SerialTesting

/// Scenarios for `RequestQueue` credentials with a known lifetime.
enum CredentialLifetimeScenarios {
    /// A transport on its own queue: every request succeeds with the credential it was sent with,
    /// which it records.
    final class StaleFleetTransport: RequestTransport, Sendable {
        typealias Request = Int
        typealias Response = String
        typealias Credential = String
        let queue: SerialQueue
        let sentWith = ScenarioBox<[String]>([])  // touched on `queue` only
        init(queue: SerialQueue) { self.queue = queue }
        func send(_ request: Int, credential: String, completion: @escaping @Sendable (Result<String, any Error>) -> Void) {
            self.queue.async {
                self.sentWith.value.append(credential)
                completion(.success(credential))
            }
        }
    }

    /// The promise (`RequestQueue.CredentialLifetime`, "Fleet-wide" in RequestsInDepth): queues
    /// that share a coordinator and find their credential stale refresh it once per generation
    /// for all of them, in the background: one `Policy.refresh`, the other queue adopts what it
    /// published; every request completes exactly once, none held back or failed.
    ///
    /// Two queues on their own `SerialQueue`s, requests submitted from two threads; the token is
    /// stale from the start (margin longer than the lifetime) and never expires within the run,
    /// and background refreshes are an hour apart, so a second refresh can only come from a
    /// second holder of generation 0.
    static let staleFleetRefreshesOncePerGeneration: @Sendable () -> Void = {
        let coordination = SerialQueue(label: "sim-stale-coord")
        let coordinator = LocalCredentialCoordinator<String>(scheduler: coordination, leaseDuration: .seconds(3600))
        let transport = StaleFleetTransport(queue: SerialQueue(label: "sim-stale-server"))
        let refreshes = ScenarioBox(0)  // counted on the refresh endpoint's queue
        let endpoint = SerialQueue(label: "sim-stale-auth")
        let expiry = MonotonicInstant.now().advanced(by: .seconds(3600))
        let policy = RequestQueue<StaleFleetTransport>.Policy(
            classify: { _, _ in .success },
            refresh: { _, completion in
                endpoint.async {
                    refreshes.value += 1
                    completion(.success("token-\(refreshes.value)"))
                }
            },
            lifetime: .init(refreshMargin: .seconds(7200), retryInterval: .seconds(3600)) { _ in expiry })
        let schedulers = [SerialQueue(label: "sim-stale-a"), SerialQueue(label: "sim-stale-b")]
        let queues = schedulers.map { scheduler in
            RequestQueue(transport: transport, credential: "token-0", policy: policy, coordinator: coordinator,
                scheduler: scheduler)
        }
        let completions = [ScenarioBox(0), ScenarioBox(0)]  // each on its queue's scheduler
        let callers = [SerialQueue(label: "sim-stale-caller-0"), SerialQueue(label: "sim-stale-caller-1")]
        for (index, caller) in callers.enumerated() {
            caller.async {
                for request in 0..<2 {
                    queues[index].submit(request) { result in
                        if case .success = result { completions[index].value += 1 }
                    }
                }
            }
        }
        let everyQueue = callers + schedulers + [coordination, transport.queue, endpoint]
        var rounds = 0
        while (completions[0].value + completions[1].value < 4 || queues.contains { $0.credentialGeneration == 0 })
            && rounds < 200
        {
            for queue in everyQueue { queue.sync {} }
            rounds += 1
        }
        Simulation.check(refreshes.value == 1, "\(refreshes.value) refreshes of generation 0 for the fleet")
        Simulation.check(
            completions[0].value == 2 && completions[1].value == 2,
            "completions \(completions.map(\.value)) after \(rounds) rounds (2 each expected)")
        Simulation.check(
            queues.allSatisfy { $0.credentialGeneration == 1 },
            "generations \(queues.map(\.credentialGeneration)): a queue did not get the new token")
        for queue in queues { queue.shutdown() }
    }
}
#endif
