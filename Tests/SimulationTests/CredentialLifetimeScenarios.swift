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
    /// A coordinator across processes in miniature: each publish is a message to `queue` (a
    /// database round trip), so the end of `Policy.refresh` and the end of its publish are apart.
    final class RemoteCoordinator: CredentialCoordinator, Sendable {
        let local: LocalCredentialCoordinator<String>
        let queue: SerialQueue
        init(queue: SerialQueue) {
            self.queue = queue
            self.local = LocalCredentialCoordinator(scheduler: queue, leaseDuration: .seconds(3600))
        }
        func acquire(
            replacing generation: UInt64,
            completion: @escaping @Sendable (Result<CredentialGrant<String>, any Error>) -> Void
        ) {
            self.queue.async { self.local.acquire(replacing: generation, completion: completion) }
        }
        func publish(
            _ credential: String, under lease: CredentialLease,
            completion: @escaping @Sendable (Result<PublishOutcome, any Error>) -> Void
        ) {
            self.queue.async { self.local.publish(credential, under: lease, completion: completion) }
        }
        func release(_ lease: CredentialLease) { self.queue.async { self.local.release(lease) } }
    }

    /// The promise (`RequestQueue.refreshSettled(within:)`): `shutdown` does not cut off a
    /// refresh already sent; once the wait returns `true`, a credential the server issued has
    /// reached the coordinator, and a refresh not sent by the shutdown is never sent.
    ///
    /// The credential has expired at the start, so the first request parks and the refresh
    /// starts (lease, `Policy.refresh` on the endpoint's queue, publish on the coordinator's).
    /// Twice: a thread shuts the queue down at any of those steps; then the endpoint does while
    /// answering (the fleet's case: the refresh is out). Each time the scenario then waits.
    static let refreshOutAtShutdownIsPublishedBeforeTheWaitEnds: @Sendable () async -> Void = {
        await refreshSettles(shutdownByTheEndpoint: false)
        await refreshSettles(shutdownByTheEndpoint: true)
    }

    /// What the endpoint shuts down, and whom it tells: written before the first request is
    /// submitted, read on the endpoint's queue after (the queue's locks order the two). Weak: the
    /// policy holds this, and the queue holds the policy.
    final class QueueToStop: @unchecked Sendable {
        weak var queue: RequestQueue<StaleFleetTransport>?
        var stopped: CheckedContinuation<Void, Never>?
    }

    private static func refreshSettles(shutdownByTheEndpoint: Bool) async {
        let coordinator = RemoteCoordinator(queue: SerialQueue(label: "sim-settle-coord"))
        let transport = StaleFleetTransport(queue: SerialQueue(label: "sim-settle-server"))
        let endpoint = SerialQueue(label: "sim-settle-auth")
        let issued = ScenarioBox(0)  // on the endpoint's queue
        let toStop = QueueToStop()
        let start = MonotonicInstant.now()
        let policy = RequestQueue<StaleFleetTransport>.Policy(
            classify: { _, _ in .success },
            refresh: { _, completion in
                endpoint.async {
                    issued.value += 1
                    if shutdownByTheEndpoint {
                        toStop.queue?.shutdown()
                        toStop.stopped?.resume()
                    }
                    completion(.success("token-1"))
                }
            },
            lifetime: .init(refreshMargin: .seconds(1), retryInterval: .seconds(3600)) { token in
                start.advanced(by: token == "token-0" ? .seconds(-1) : .seconds(3600))
            })
        let queue = RequestQueue(
            transport: transport, credential: "token-0", policy: policy, coordinator: coordinator,
            scheduler: SerialQueue(label: "sim-settle-queue"))
        toStop.queue = queue
        if shutdownByTheEndpoint {
            await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
                toStop.stopped = stopped
                queue.submit(1) { _ in }
            }
        } else {
            queue.submit(1) { _ in }
            await SerialQueue(label: "sim-settle-stopper").run { queue.shutdown() }
        }
        let settled = await queue.refreshSettled(within: .seconds(3600))
        // The coordinator first: a token the server issued before the wait ended must be there.
        let generation = coordinator.local.generation
        let issuedWhenSettled = await endpoint.run { issued.value }
        Simulation.check(settled, "the wait timed out: a refresh still out after an hour")
        Simulation.check(
            issuedWhenSettled == 0 || generation == 1,
            "the wait ended with the server's new token unpublished (coordinator at generation "
                + "\(generation.map(String.init) ?? "none"), shut down by the endpoint: \(shutdownByTheEndpoint))")
        for serial in [coordinator.queue, transport.queue] { await serial.run {} }
        let issuedAtTheEnd = await endpoint.run { issued.value }
        Simulation.check(
            issuedAtTheEnd == issuedWhenSettled, "a refresh was sent after the queue shut down and the wait ended")
    }
}
#endif
