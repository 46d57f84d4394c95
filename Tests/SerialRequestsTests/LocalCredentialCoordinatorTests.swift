import SerialCore
import SerialRequests
import SerialTesting
import Testing

/// The in-process coordinator alone: one lease per generation, waiters answered in order,
/// fencing by lease number, expiry on virtual time.
@Suite("LocalCredentialCoordinator: leases, fencing, waiters")
struct LocalCredentialCoordinatorTests {
    final class Answers: Sendable {
        let list = LockedValue<[String]>([])
        func record(_ name: String) -> @Sendable (Result<CredentialGrant<String>, any Error>) -> Void {
            { result in
                let text: String
                switch result {
                case .success(.lease(let lease)): text = "\(name): lease \(lease.fence) on \(lease.generation)"
                case .success(.published(let credential, let generation)): text = "\(name): \(credential) at \(generation)"
                case .failure(let error): text = "\(name): \(error)"
                }
                self.list.withLock { $0.append(text) }
            }
        }
        var all: [String] { self.list.withLock { $0 } }
    }

    /// A coordinator on virtual time whose first lease goes to "a", then "b" and "c" wait.
    private func threeCallers(lease: Duration) -> (VirtualScheduler, LocalCredentialCoordinator<String>, Answers) {
        let scheduler = VirtualScheduler()
        let coordinator = LocalCredentialCoordinator<String>(scheduler: scheduler, leaseDuration: lease)
        let answers = Answers()
        for name in ["a", "b", "c"] { coordinator.acquire(replacing: 0, completion: answers.record(name)) }
        return (scheduler, coordinator, answers)
    }

    private func publish(
        _ coordinator: LocalCredentialCoordinator<String>, _ credential: String, _ lease: CredentialLease
    ) -> PublishOutcome? {
        let outcome = LockedValue<PublishOutcome?>(nil)
        coordinator.publish(credential, under: lease) { result in outcome.withLock { $0 = try? result.get() } }
        return outcome.withLock { $0 }
    }

    @Test func oneLeasePerGenerationAndWaitersHearThePublishInOrder() {
        let (_, coordinator, answers) = self.threeCallers(lease: .seconds(5))
        #expect(answers.all == ["a: lease 1 on 0"])
        #expect(self.publish(coordinator, "t1", CredentialLease(generation: 0, fence: 1)) == .accepted(generation: 1))
        #expect(answers.all == ["a: lease 1 on 0", "b: t1 at 1", "c: t1 at 1"])
        coordinator.acquire(replacing: 0, completion: answers.record("late"))
        #expect(answers.all.last == "late: t1 at 1", "an older generation gets the newer credential at once")
    }

    @Test func anExpiredLeaseGoesToTheFirstWaiterAndFencesTheOldHolder() {
        let (scheduler, coordinator, answers) = self.threeCallers(lease: .seconds(5))
        scheduler.advance(by: .milliseconds(4_999))
        #expect(answers.all.count == 1)
        scheduler.advance(by: .milliseconds(1))
        #expect(answers.all == ["a: lease 1 on 0", "b: lease 2 on 0"], "c waits behind b's lease")
        #expect(self.publish(coordinator, "from a", CredentialLease(generation: 0, fence: 1)) == .refused)
        #expect(self.publish(coordinator, "from b", CredentialLease(generation: 0, fence: 2)) == .accepted(generation: 1))
        #expect(answers.all.last == "c: from b at 1")
        #expect(self.publish(coordinator, "b again", CredentialLease(generation: 0, fence: 2)) == .refused)
    }

    @Test func anExpiredLeaseNobodyTookOverMayStillPublish() {
        let scheduler = VirtualScheduler()
        let coordinator = LocalCredentialCoordinator<String>(scheduler: scheduler, leaseDuration: .seconds(1))
        let answers = Answers()
        coordinator.acquire(replacing: 0, completion: answers.record("a"))
        scheduler.advance(by: .seconds(10))
        #expect(coordinator.currentLease == nil)
        #expect(self.publish(coordinator, "t1", CredentialLease(generation: 0, fence: 1)) == .accepted(generation: 1))
    }

    @Test func aReleasedLeaseGoesToTheFirstWaiterAtOnce() {
        let (_, coordinator, answers) = self.threeCallers(lease: .seconds(60))
        coordinator.release(CredentialLease(generation: 0, fence: 1))
        #expect(answers.all == ["a: lease 1 on 0", "b: lease 2 on 0"], "c waits behind b's lease")
        coordinator.release(CredentialLease(generation: 0, fence: 1))  // stale: nothing happens
        #expect(coordinator.currentLease == CredentialLease(generation: 0, fence: 2))
        coordinator.release(CredentialLease(generation: 0, fence: 2))
        #expect(answers.all.last == "c: lease 3 on 0")
    }

    @Test func aGenerationNewerThanAnyPublishedIsATypedError() {
        let scheduler = VirtualScheduler()
        let coordinator = LocalCredentialCoordinator<String>(scheduler: scheduler)
        let answers = Answers()
        coordinator.acquire(replacing: 2, completion: answers.record("a"))
        coordinator.acquire(replacing: 3, completion: answers.record("b"))
        #expect(answers.all.last == "b: \(CredentialCoordinatorError.generationAhead(asked: 3, current: 2))")
    }
}
