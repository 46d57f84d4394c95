import SerialCore
import SerialRequests
import SerialTesting
import Testing

/// RequestQueue with a known credential lifetime (`Policy.lifetime`): fresh, stale (one
/// background refresh while requests keep going), expired (never sent); the overnight start; an
/// outage of the credential service; the refresh's own slot; a rejection racing a background
/// refresh; cancel and shutdown during one; a margin longer than the lifetime. All on virtual
/// time: token 0 expires 60 s after the start and is stale from 50 s (margin 10 s), unless said.
@Suite("RequestQueue credential lifetime: fresh, stale, expired")
struct RequestQueueCredentialLifetimeTests {
    static let configuration = TestQueue.Configuration(maximumConcurrent: 4, agingInterval: nil)
    /// Room in the refresh window for many refreshes (the default allows 3 a minute).
    static let roomy = TestQueue.Configuration(maximumConcurrent: 4, refreshLimit: 100, agingInterval: nil)

    /// The instants the refresh endpoint was called at, from the start.
    func refreshStarts(_ harness: Harness) -> [Duration] {
        harness.server.state.withLock { $0.refreshStartedAt }.map { harness.start.duration(to: $0) }
    }

    @Test func theCredentialIsFreshThenStaleThenExpiredOnTheQueuesClock() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        #expect(harness.queue.credentialFreshness == .fresh)
        harness.advance(.seconds(50) - .nanoseconds(1))
        #expect(harness.queue.credentialFreshness == .fresh)
        harness.advance(.nanoseconds(1))
        #expect(harness.queue.credentialFreshness == .stale)
        harness.advance(.seconds(10) - .nanoseconds(1))
        #expect(harness.queue.credentialFreshness == .stale)
        harness.advance(.nanoseconds(1))
        #expect(harness.queue.credentialFreshness == .expired)
        // Nothing was asked of it: no refresh until a request needs the credential.
        #expect(harness.server.refreshCalls == 0)
    }

    @Test func aFreshCredentialIsSentWithoutAnyRefresh() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.advance(.seconds(49))
        harness.submit("a")
        harness.advance(.seconds(1) - .milliseconds(1))
        #expect(harness.recorder.only("a")?.isSuccess == true)
        #expect(harness.server.refreshCalls == 0)
    }

    @Test func aStaleCredentialIsRefreshedInTheBackgroundWhileRequestsKeepGoingOutWithIt() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.advance(.seconds(55))
        harness.submit("a")
        harness.submit("b")
        harness.run()
        #expect(self.refreshStarts(harness) == [.seconds(55)], "the stale credential was not refreshed")
        // Sent at once with the still-valid token 0, beside the refresh (20 ms).
        #expect(harness.server.sends.map(\.credential) == [0, 0])
        #expect(harness.sendTimes("a") == [.seconds(55)])
        harness.advance(.milliseconds(20))
        #expect(harness.queue.credentialGeneration == 1)
        #expect(harness.queue.credentialFreshness == .fresh)
        harness.submit("c")
        harness.advance(.seconds(1))
        #expect(harness.server.sends.last?.credential == 1)
        for tag in ["a", "b", "c"] { #expect(harness.recorder.only(tag)?.isSuccess == true, "\(tag)") }
        #expect(harness.server.rejected == 0)
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.queue.statistics.refreshesAhead == 1)
    }

    @Test func anExpiredCredentialIsNeverSentRequestsWaitForTheRefresh() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.advance(.seconds(61))
        harness.submit("a")
        harness.submit("b", priority: .high)
        harness.run()
        #expect(harness.server.sends.isEmpty, "a request went out with the expired credential")
        #expect(harness.queue.parkedCount == 2)
        #expect(harness.recorder.states("a") == [.redirect])
        harness.advance(.seconds(1))
        #expect(harness.server.sentNames == ["b", "a"], "parked requests go in priority order")
        #expect(harness.server.sends.allSatisfy { $0.credential == 1 && $0.signedWith == 1 })
        #expect(harness.recorder.only("a")?.isSuccess == true)
        #expect(harness.recorder.states("a") == [.redirect, .running, .success])
        #expect(harness.server.rejected == 0)
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.queue.statistics.heldForExpiry == 2)
    }

    /// The seed's overnight start: the kept token expired hours ago; the first requests wait for
    /// one refresh and are sent once each, with the new token. Zero rejected, one refresh.
    @Test func aQueueCreatedWithAnExpiredCredentialRefreshesOnceBeforeItsFirstSend() {
        let harness = Harness(
            TestQueue.Configuration(maximumConcurrent: 2, agingInterval: nil),
            lifetime: TokenLifetime(firstExpiresIn: .seconds(-8 * 3600)))
        #expect(harness.queue.credentialFreshness == .expired)
        for index in 0..<5 { harness.submit("start\(index)") }
        harness.advance(.seconds(1))
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.server.rejected == 0)
        #expect(harness.server.sends.count == 5)
        #expect(harness.server.sends.allSatisfy { $0.credential == 1 })
        for index in 0..<5 { #expect(harness.recorder.only("start\(index)")?.isSuccess == true, "start\(index)") }
        #expect(harness.queue.statistics.expiries == 0)
    }

    /// The outage: the refresh endpoint fails while the token is stale. No request fails; the
    /// background refresh is tried again after `retryInterval` plus at most `retryJitter` of it,
    /// with traffic or without.
    @Test func aFailedBackgroundRefreshFailsNothingAndIsRetriedAtTheJitteredInterval() {
        let lifetime = TokenLifetime(margin: .seconds(30), retryInterval: .seconds(5), retryJitter: 0.5)
        let harness = Harness(Self.roomy, lifetime: lifetime)
        harness.server.state.withLock { $0.refreshScript = [false, false, false, true] }
        harness.advance(.seconds(30))
        // A request a second from 30 s to 44 s: a refresh starts at 30 s and fails at 30.02 s.
        for second in 30..<45 {
            harness.submit("r\(second)")
            harness.advance(.seconds(1))
        }
        // Then silence: the retry timer tries again without traffic.
        harness.advance(.seconds(15))
        let starts = self.refreshStarts(harness)
        #expect(starts.count == 4, "refreshes at \(starts)")
        for (earlier, later) in zip(starts, starts.dropFirst()) {
            let gap = later - earlier
            #expect(gap >= .seconds(5) && gap <= .milliseconds(7_520), "retried after \(gap)")
        }
        #expect(harness.queue.credentialGeneration == 1)
        for second in 30..<45 { #expect(harness.recorder.only("r\(second)")?.isSuccess == true, "r\(second)") }
        #expect(harness.server.rejected == 0)
        #expect(harness.queue.statistics.backgroundRefreshesFailed == 3)
    }

    /// Once the token has really expired, the requests waiting for the refresh fail when it does:
    /// each once, with its error, as after a rejection.
    @Test func afterExpiryParkedRequestsFailOnceEachWhenTheRefreshFails() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshScript = [false] }
        harness.advance(.seconds(55))
        harness.submit("stale")  // a background refresh fails at 55.02 s: nothing fails; retried after 60 s
        harness.advance(.seconds(6))
        #expect(harness.recorder.only("stale")?.isSuccess == true)
        harness.submit("a")
        harness.submit("b")
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("a")?.errorName == "refreshFailed")
        #expect(harness.recorder.only("b")?.errorName == "refreshFailed")
        #expect(harness.server.sends.count == 1, "a request went out with the expired credential")
        #expect(harness.queue.unfinishedCount == 0)
    }

    /// The refresh has its own slot: both slots and a kind are held by long requests (sent while
    /// fresh) that will meet the expiry; a request parks at the expiry, and the refresh starts at once.
    @Test func theRefreshStartsAtOnceWhileEverySlotIsHeldByRequestsThatNeedIt() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 2, agingInterval: nil), lifetime: TokenLifetime())
        harness.advance(.seconds(45))
        harness.submit("long1", latency: .seconds(30), kind: "k")
        harness.submit("long2", latency: .seconds(30))
        harness.advance(.seconds(16))  // 61 s: expired; both slots and kind k held until 75 s
        harness.submit("waiting", kind: "k")
        harness.run()
        #expect(self.refreshStarts(harness) == [.seconds(61)], "the refresh waited for a slot")
        #expect(harness.queue.runningCount == 3, "two requests and the refresh")
        harness.advance(.seconds(100))
        // The long ones met the expiry at 75 s and were sent again at once with token 1.
        #expect(harness.sendTimes("long1") == [.seconds(45), .seconds(75)])
        #expect(harness.server.sends.filter { $0.name == "waiting" }.map(\.credential) == [1])
        for tag in ["long1", "long2", "waiting"] { #expect(harness.recorder.only(tag)?.isSuccess == true, "\(tag)") }
        #expect(harness.server.refreshCalls == 1)
    }

    /// The same while a unique request holds the gate.
    @Test func theRefreshStartsWhileAUniqueRequestRuns() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.advance(.seconds(45))
        harness.submit("login", latency: .seconds(30), priority: .unique)
        harness.advance(.seconds(16))
        harness.submit("after")
        harness.run()
        #expect(self.refreshStarts(harness) == [.seconds(61)])
        harness.advance(.seconds(100))
        #expect(harness.recorder.only("after")?.isSuccess == true)
        #expect(harness.recorder.only("login")?.isSuccess == true)
        #expect(harness.server.refreshCalls == 1)
    }

    /// A 401 arriving while a background refresh runs joins it: one refresh, not two; new
    /// requests then wait for it rather than go out with the rejected token.
    @Test func aRejectionDuringABackgroundRefreshJoinsItOneRefreshNotTwo() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshLatency = .seconds(2) }
        harness.advance(.seconds(50))
        harness.submit("stale")  // background refresh 50 s .. 52 s
        harness.advance(.milliseconds(500))
        harness.server.expireToken()  // the server revokes token 0 early
        harness.submit("rejected")
        harness.advance(.milliseconds(100))  // rejected at 50.51 s: parked behind the running refresh
        harness.submit("held")
        harness.advance(.milliseconds(100))
        #expect(harness.sendTimes("held").isEmpty, "sent with the token the server just rejected")
        harness.advance(.seconds(2))
        #expect(harness.server.refreshCalls == 1)
        // One refresh of the queue's, not a second one that adopts the first's (the lease hides that).
        #expect(harness.queue.statistics.refreshesStarted == 1)
        #expect(harness.queue.statistics.credentialsAdopted == 0)
        #expect(harness.sendTimes("rejected") == [.milliseconds(50_500), .seconds(52)])
        #expect(harness.sendTimes("held") == [.seconds(52)])
        for tag in ["stale", "rejected", "held"] { #expect(harness.recorder.only(tag)?.isSuccess == true, "\(tag)") }
    }

    /// Cancelling during a background refresh: a request in flight and one parked (the token
    /// expired while the refresh ran) each end once, cancelled; the refresh still installs its token.
    @Test func cancellingDuringABackgroundRefreshEndsEachRequestOnce() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshLatency = .seconds(20) }
        harness.advance(.seconds(50))
        let flying = harness.submit("flying", latency: .seconds(30))  // background refresh 50 s .. 70 s
        harness.advance(.seconds(11))
        let parked = harness.submit("parked")
        harness.run()
        #expect(harness.queue.parkedCount == 1)
        #expect(flying.cancel() && parked.cancel())
        #expect(!flying.cancel() && !parked.cancel())
        harness.advance(.seconds(30))
        #expect(harness.recorder.results("flying").map(\.errorName) == ["cancelled"])
        #expect(harness.recorder.results("parked").map(\.errorName) == ["cancelled"])
        #expect(harness.queue.credentialGeneration == 1)
        harness.submit("later")
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("later")?.isSuccess == true)
        #expect(harness.server.refreshCalls == 1)
    }

    /// Shutting down during a background refresh: each request ends once with `.shutDown`; the
    /// refresh's late answer is ignored.
    @Test func shuttingDownDuringABackgroundRefreshEndsEachRequestOnceAndIgnoresTheAnswer() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshLatency = .seconds(20) }
        harness.advance(.seconds(50))
        harness.submit("flying", latency: .seconds(30))
        harness.advance(.seconds(11))
        harness.submit("parked")
        harness.run()
        #expect(harness.queue.shutdown() == 2)
        harness.advance(.seconds(60))
        #expect(harness.recorder.results("flying").map(\.errorName) == ["shutDown"])
        #expect(harness.recorder.results("parked").map(\.errorName) == ["shutDown"])
        #expect(harness.queue.statistics.refreshesSucceeded == 0, "the refresh's answer was applied after shutdown")
        #expect(harness.queue.credentialGeneration == 0)
        #expect(harness.queue.runningCount == 0)
    }

    /// A margin longer than the lifetime (documented): each token is stale from the start, is used,
    /// and is replaced in the background no more often than `retryInterval`; nothing is rejected.
    @Test func aMarginLongerThanTheLifetimeRefreshesAtMostOncePerRetryInterval() {
        let lifetime = TokenLifetime(lifetime: .seconds(5), firstExpiresIn: .seconds(5), margin: .seconds(10),
            retryInterval: .seconds(3))
        let harness = Harness(Self.roomy, lifetime: lifetime)
        for step in 0..<40 {
            harness.submit("r\(step)")
            harness.advance(.milliseconds(500))
        }
        let starts = self.refreshStarts(harness)
        for (earlier, later) in zip(starts, starts.dropFirst()) {
            #expect(later - earlier >= .seconds(3), "refreshes at \(starts)")
        }
        #expect(starts.count == 7, "refreshes at \(starts)")
        for step in 0..<40 { #expect(harness.recorder.only("r\(step)")?.isSuccess == true, "r\(step)") }
        #expect(harness.server.rejected == 0)
    }

    /// Without a known expiry the queue is today's: a token that expires is sent, rejected, and
    /// replaced after the rejection.
    @Test func withoutAKnownExpiryTheCredentialIsReplacedOnlyAfterARejection() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime(known: false))
        harness.advance(.seconds(61))
        #expect(harness.queue.credentialFreshness == .fresh)
        harness.submit("a")
        harness.advance(.seconds(1))
        #expect(harness.server.rejected == 1)
        #expect(harness.sendTimes("a") == [.seconds(61), .seconds(61) + .milliseconds(30)])
        #expect(harness.recorder.only("a")?.isSuccess == true)
        #expect(harness.queue.statistics.refreshesAhead == 0)
    }

    /// Two queues sharing a coordinator reach their margin together: one refresh for both per
    /// generation, the other adopts the published token, and nothing is rejected.
    @Test func queuesSharingACoordinatorRefreshOncePerGenerationAheadOfExpiry() {
        let scheduler = VirtualScheduler()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(5))
        let first = Harness(Self.configuration, scheduler: scheduler, coordinator: coordinator, lifetime: TokenLifetime())
        let second = Harness(
            Self.configuration, scheduler: scheduler, coordinator: coordinator, lifetime: TokenLifetime(),
            server: first.server)
        first.advance(.seconds(50))
        first.submit("a")
        second.submit("b")  // both stale at 50 s: one lease, one refresh
        first.advance(.seconds(1))
        #expect(first.server.refreshCalls == 1)
        #expect(first.queue.credentialGeneration == 1 && second.queue.credentialGeneration == 1)
        #expect(second.queue.statistics.credentialsAdopted == 1)
        // Token 1 expires at 110.02 s: stale from 100.02 s; this time the second queue gets there first.
        first.advance(.milliseconds(49_500))
        second.submit("c")
        first.advance(.seconds(1))
        first.submit("d")  // at 101.5 s: the published token 2 is adopted at once
        first.advance(.seconds(1))
        #expect(first.server.refreshCalls == 2)
        #expect(first.queue.statistics.credentialsAdopted == 1)
        #expect(first.queue.credentialGeneration == 2 && second.queue.credentialGeneration == 2)
        #expect(first.server.rejected == 0)
        for tag in ["a", "d"] { #expect(first.recorder.only(tag)?.isSuccess == true, "\(tag)") }
        for tag in ["b", "c"] { #expect(second.recorder.only(tag)?.isSuccess == true, "\(tag)") }
    }
}
