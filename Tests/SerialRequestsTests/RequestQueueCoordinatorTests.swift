import SerialCore
import SerialRequests
import SerialTesting
import Testing

/// RequestQueue refreshing through a `CredentialCoordinator`: queues sharing one refresh once per
/// generation; a queue waits behind another holder's lease, adopts what it publishes, takes over
/// when the lease expires, and never overwrites a newer credential (fencing). The test plays the
/// other holder (another process) on the same virtual time.
@Suite("RequestQueue coordinated refresh: leases, fencing, adoption")
struct RequestQueueCoordinatorTests {
    /// A harness whose queue shares `coordinator` (leases of `lease`), and a second queue on the
    /// same scheduler and server, with its own recorder: two replicas of one client.
    struct Pair {
        let harness: Harness
        let coordinator: LocalCredentialCoordinator<Int>
        let peer: TestQueue
        let peerRecorder = Recorder()

        init(lease: Duration = .seconds(5), configuration: TestQueue.Configuration = .init(maximumConcurrent: 100, agingInterval: nil)) {
            let scheduler = VirtualScheduler()
            let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: lease)
            self.harness = Harness(configuration, scheduler: scheduler, coordinator: coordinator)
            self.coordinator = coordinator
            self.peer = TestQueue(
                transport: self.harness.server, credential: 0, policy: self.harness.server.policy(),
                coordinator: coordinator, configuration: configuration, scheduler: scheduler)
        }

        func submitToPeer(_ tag: String, latency: Duration = .milliseconds(10)) {
            self.peer.submit(
                Call(name: tag, latency: latency), onStateChange: self.peerRecorder.observer(tag),
                completion: self.peerRecorder.completion(tag))
        }
    }

    /// The grant the test's "other process" got.
    final class Held: Sendable {
        let grant = LockedValue<CredentialGrant<Int>?>(nil)
        var lease: CredentialLease? {
            self.grant.withLock { if case .lease(let lease) = $0 { return lease } else { return nil } }
        }
    }

    private func takeLease(_ coordinator: LocalCredentialCoordinator<Int>, generation: UInt64 = 0) -> Held {
        let held = Held()
        coordinator.acquire(replacing: generation) { result in held.grant.withLock { $0 = try? result.get() } }
        return held
    }

    @Test func twoQueuesSharingACoordinatorRefreshOncePerGenerationForBoth() {
        let pair = Pair()
        for index in 0..<50 {
            pair.harness.submit("a\(index)")
            pair.submitToPeer("b\(index)")
        }
        pair.harness.run()
        pair.harness.server.expireToken()
        pair.harness.advance(.seconds(1))
        #expect(pair.harness.server.refreshCalls == 1)
        #expect(pair.harness.queue.credentialGeneration == 1 && pair.peer.credentialGeneration == 1)
        let adopted = pair.harness.queue.statistics.credentialsAdopted + pair.peer.statistics.credentialsAdopted
        #expect(adopted == 1, "one queue refreshed, the other adopted its credential")
        for index in 0..<50 {
            #expect(pair.harness.recorder.results("a\(index)").count == 1)
            #expect(pair.harness.recorder.only("a\(index)")?.isSuccess == true)
            #expect(pair.peerRecorder.only("b\(index)")?.isSuccess == true)
        }
    }

    @Test func twoQueuesWithTheirOwnCoordinatorsRefreshTwice() {
        // What sharing prevents: each queue refreshes the same generation (against a rotating
        // server, the second use of the refresh token would be taken for theft).
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 100, agingInterval: nil))
        let peer = TestQueue(
            transport: harness.server, credential: 0, policy: harness.server.policy(),
            configuration: .init(maximumConcurrent: 100, agingInterval: nil), scheduler: harness.scheduler)
        harness.submit("a")
        peer.submit(Call(name: "b")) { _ in }
        harness.run()
        harness.server.expireToken()
        harness.advance(.milliseconds(15))
        #expect(harness.server.refreshCalls == 2)
    }

    @Test func aQueueWaitsBehindAnotherHoldersLeaseAndAdoptsWhatItPublishes() {
        let pair = Pair(lease: .seconds(5))
        let other = self.takeLease(pair.coordinator)
        let lease = try! #require(other.lease)
        for index in 0..<20 { pair.harness.submit("r\(index)") }
        pair.harness.run()
        pair.harness.server.expireToken()
        pair.harness.advance(.seconds(2))
        #expect(pair.harness.server.refreshCalls == 0, "the other holder's lease is live: no refresh here")
        #expect(pair.harness.queue.parkedCount == 20)
        // The other process refreshed at the server and publishes its token, 7.
        pair.harness.server.state.withLock { $0.alsoValid = [7] }
        let outcome = LockedValue<PublishOutcome?>(nil)
        pair.coordinator.publish(7, under: lease) { result in outcome.withLock { $0 = try? result.get() } }
        #expect(outcome.withLock { $0 } == .accepted(generation: 1))
        pair.harness.advance(.milliseconds(100))
        #expect(pair.harness.server.refreshCalls == 0)
        #expect(pair.harness.queue.credentialGeneration == 1)
        #expect(pair.harness.queue.statistics.credentialsAdopted == 1)
        for index in 0..<20 { #expect(pair.harness.recorder.only("r\(index)")?.isSuccess == true) }
        #expect(pair.harness.server.sends.suffix(20).allSatisfy { $0.credential == 7 })
    }

    @Test func whenTheOtherHoldersLeaseExpiresTheQueueRefreshesAndTheStaleHolderCannotPublish() {
        let pair = Pair(lease: .seconds(5))
        let other = self.takeLease(pair.coordinator)
        let stale = try! #require(other.lease)
        pair.harness.submit("r")
        pair.harness.run()
        pair.harness.server.expireToken()
        pair.harness.advance(.milliseconds(4_900))
        #expect(pair.harness.server.refreshCalls == 0, "still within the other's lease")
        pair.harness.advance(.milliseconds(200))  // the lease expired at 5 s: the queue takes over
        #expect(pair.harness.server.refreshCalls == 1)
        #expect(pair.harness.server.state.withLock { $0.refreshStartedAt }.map { pair.harness.start.duration(to: $0) }
            == [.seconds(5)])
        pair.harness.advance(.seconds(1))
        #expect(pair.harness.recorder.only("r")?.isSuccess == true)
        #expect(pair.harness.queue.credentialGeneration == 1)
        // The paused holder wakes up and publishes under its expired lease: refused (fenced).
        let outcome = LockedValue<PublishOutcome?>(nil)
        pair.coordinator.publish(99, under: stale) { result in outcome.withLock { $0 = try? result.get() } }
        #expect(outcome.withLock { $0 } == .refused)
        #expect(pair.coordinator.generation == 1)
        pair.harness.submit("after")
        pair.harness.advance(.seconds(1))
        #expect(pair.harness.server.sends.last?.credential == 1, "the queue's credential was not overwritten")
    }

    @Test func aPublishUnderASupersededLeaseIsRefusedAndTheQueueAdoptsTheWinner() {
        let pair = Pair(lease: .seconds(1), configuration: .init(maximumConcurrent: 10, refreshTimeout: .seconds(30), agingInterval: nil))
        pair.harness.server.state.withLock { $0.refreshLatency = .seconds(3) }
        pair.harness.submit("r")
        pair.harness.run()
        pair.harness.server.expireToken()
        pair.harness.advance(.milliseconds(10))  // r expires; the queue holds the lease and refreshes (3 s)
        #expect(pair.harness.server.refreshCalls == 1)
        pair.harness.advance(.seconds(1))  // its lease expired: another process takes over and publishes 9
        let other = self.takeLease(pair.coordinator)
        let lease = try! #require(other.lease)
        pair.harness.server.state.withLock { $0.alsoValid = [9] }
        pair.coordinator.publish(9, under: lease) { _ in }
        pair.harness.advance(.seconds(3))  // the queue's refresh answers: its publish is refused
        let statistics = pair.harness.queue.statistics
        #expect(statistics.publishesRefused == 1)
        #expect(statistics.credentialsAdopted == 1)
        #expect(pair.coordinator.generation == 1)
        #expect(pair.harness.recorder.only("r")?.isSuccess == true)
        #expect(pair.harness.server.sends.last?.credential == 9, "re-sent with the winner's credential")
    }

    @Test func waitingBehindALeaseIsBoundedByTheRefreshTimeoutAndALateLeaseIsReleased() {
        let pair = Pair(lease: .seconds(10), configuration: .init(maximumConcurrent: 10, refreshTimeout: .seconds(2), agingInterval: nil))
        let other = self.takeLease(pair.coordinator)
        #expect(other.lease != nil)
        pair.harness.submit("a")
        pair.harness.submit("b")
        pair.harness.run()
        pair.harness.server.expireToken()
        pair.harness.advance(.seconds(3))
        #expect(pair.harness.recorder.only("a")?.errorName == "refreshTimedOut")
        #expect(pair.harness.recorder.only("b")?.errorName == "refreshTimedOut")
        #expect(pair.harness.queue.runningCount == 0)
        // The other's lease expires at 10 s: the queue's abandoned wait gets the next lease and
        // gives it back at once, without refreshing.
        pair.harness.advance(.seconds(8))
        #expect(pair.harness.server.refreshCalls == 0)
        #expect(pair.coordinator.currentLease == nil, "the late lease was released")
        pair.harness.submit("c")
        pair.harness.advance(.seconds(1))
        #expect(pair.harness.recorder.only("c")?.isSuccess == true)
        #expect(pair.harness.server.refreshCalls == 1)
    }

    @Test func aCoordinatorThatFailsFailsEachParkedRequestOnceWithItsError() {
        let coordinator = ScriptedCoordinator(acquire: .failure(StoreDown()))
        let harness = Harness(.init(maximumConcurrent: 10, agingInterval: nil), coordinator: coordinator)
        for index in 0..<5 { harness.submit("r\(index)") }
        harness.run()
        harness.server.expireToken()
        harness.advance(.seconds(1))
        #expect(harness.server.refreshCalls == 0)
        for index in 0..<5 {
            let result = harness.recorder.only("r\(index)")
            #expect(result?.errorName == "refreshFailed")
            if case .failure(.refreshFailed(let error)) = result { #expect(error is StoreDown) }
        }
        #expect(harness.queue.statistics.refreshesFailed == 1)
    }

    @Test func aPublishThatFailsFailsTheParkedRequestsAndTheLeaseIsNotReleasedTwice() {
        let coordinator = ScriptedCoordinator(
            acquire: .success(.lease(CredentialLease(generation: 0, fence: 1))), publish: .failure(StoreDown()))
        let harness = Harness(.init(maximumConcurrent: 10, agingInterval: nil), coordinator: coordinator)
        harness.submit("r")
        harness.run()
        harness.server.expireToken()
        harness.advance(.seconds(1))
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.recorder.only("r")?.errorName == "refreshFailed")
        #expect(coordinator.calls == ["acquire 0", "publish 1 under lease 1 on generation 0"])
    }

    @Test func aFailedRefreshReleasesTheLeaseForTheNextHolder() {
        let pair = Pair(lease: .seconds(30))
        pair.harness.server.state.withLock { $0.refreshScript = [false, true] }
        pair.harness.submit("a")
        pair.harness.run()
        pair.harness.server.expireToken()
        pair.harness.advance(.seconds(1))
        #expect(pair.harness.recorder.only("a")?.errorName == "refreshFailed")
        #expect(pair.coordinator.currentLease == nil, "released, not left to expire in 30 s")
        pair.submitToPeer("b")
        pair.harness.advance(.seconds(1))
        #expect(pair.peerRecorder.only("b")?.isSuccess == true)
        #expect(pair.harness.server.refreshCalls == 2)
    }

    @Test func aQueueStartedWithAPublishedGenerationAsksForItsSuccessor() {
        let scheduler = VirtualScheduler()
        let coordinator = ScriptedCoordinator(acquire: .success(.published(5, generation: 4)))
        let server = SimulatedServer(scheduler: scheduler)
        server.state.withLock { $0.alsoValid = [5] }
        let queue = TestQueue(
            transport: server, credential: 3, credentialGeneration: 3, policy: server.policy(),
            coordinator: coordinator, scheduler: scheduler)
        let result = LockedValue<RequestResult<Reply>?>(nil)
        queue.submit(Call(name: "r")) { outcome in result.withLock { $0 = outcome } }
        scheduler.advance(by: .seconds(1))
        #expect(coordinator.calls.first == "acquire 3")
        #expect(queue.credentialGeneration == 4)
        #expect(result.withLock { $0 }?.isSuccess == true)
    }
}

struct StoreDown: Error {}

/// A coordinator that answers every call the same scripted way, at once, and records the calls.
final class ScriptedCoordinator: CredentialCoordinator, Sendable {
    typealias Credential = Int
    let acquireAnswer: Result<CredentialGrant<Int>, any Error>
    let publishAnswer: Result<PublishOutcome, any Error>
    let log = LockedValue<[String]>([])

    init(
        acquire: Result<CredentialGrant<Int>, any Error>,
        publish: Result<PublishOutcome, any Error> = .success(.accepted(generation: 1))
    ) {
        self.acquireAnswer = acquire
        self.publishAnswer = publish
    }

    var calls: [String] { self.log.withLock { $0 } }

    func acquire(
        replacing generation: UInt64, completion: @escaping @Sendable (Result<CredentialGrant<Int>, any Error>) -> Void
    ) {
        self.log.withLock { $0.append("acquire \(generation)") }
        completion(self.acquireAnswer)
    }

    func publish(
        _ credential: Int, under lease: CredentialLease,
        completion: @escaping @Sendable (Result<PublishOutcome, any Error>) -> Void
    ) {
        self.log.withLock { $0.append("publish \(credential) under \(lease)") }
        completion(self.publishAnswer)
    }

    func release(_ lease: CredentialLease) {
        self.log.withLock { $0.append("release \(lease)") }
    }
}
