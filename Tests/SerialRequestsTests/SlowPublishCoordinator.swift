import SerialCore
import SerialRequests
import SerialTesting

/// What `SlowPublishCoordinator` fails its publishes with when told to.
struct PublishFailed: Error {}

/// A `LocalCredentialCoordinator` whose publishes take `publishLatency` of virtual time, or
/// fail with `PublishFailed` when `failPublishes`; it records every credential it was asked to
/// publish.
final class SlowPublishCoordinator: CredentialCoordinator, Sendable {
    let local: LocalCredentialCoordinator<Int>
    let scheduler: VirtualScheduler
    let publishLatency: Duration
    let failPublishes: Bool
    let publishes = LockedValue<[Int]>([])

    init(
        scheduler: VirtualScheduler, leaseDuration: Duration = .seconds(60),
        publishLatency: Duration = .milliseconds(100), failPublishes: Bool = false
    ) {
        self.local = LocalCredentialCoordinator(scheduler: scheduler, leaseDuration: leaseDuration)
        self.scheduler = scheduler
        self.publishLatency = publishLatency
        self.failPublishes = failPublishes
    }

    func acquire(
        replacing generation: UInt64,
        completion: @escaping @Sendable (Result<CredentialGrant<Int>, any Error>) -> Void
    ) {
        self.local.acquire(replacing: generation, completion: completion)
    }

    func publish(
        _ credential: Int, under lease: CredentialLease,
        completion: @escaping @Sendable (Result<PublishOutcome, any Error>) -> Void
    ) {
        self.publishes.withLock { $0.append(credential) }
        _ = try? self.scheduler.schedule(after: self.publishLatency) {
            if self.failPublishes { return completion(.failure(PublishFailed())) }
            self.local.publish(credential, under: lease, completion: completion)
        }
    }

    func release(_ lease: CredentialLease) { self.local.release(lease) }
}
