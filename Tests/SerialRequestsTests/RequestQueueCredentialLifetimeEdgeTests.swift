import SerialCore
import SerialRequests
import SerialTesting
import Testing

/// The edges of a credential's lifetime (issue 40's attack), on virtual time: extremes, releases
/// and shutdowns with a background retry armed, races with the expiry. Token 0 expires 60 s after
/// the start and is stale from 50 s (margin 10 s), unless said.
@Suite("RequestQueue credential lifetime: edges")
struct RequestQueueCredentialLifetimeEdgeTests {
    static let configuration = RequestQueueCredentialLifetimeTests.configuration
    static let roomy = RequestQueueCredentialLifetimeTests.roomy

    func refreshStarts(_ harness: Harness) -> [Duration] {
        RequestQueueCredentialLifetimeTests().refreshStarts(harness)
    }

    /// A queue the test alone holds (no harness), whose policy knows `lifetime`, to be released.
    static func releasableQueue(
        _ server: SimulatedServer, _ scheduler: VirtualScheduler, _ lifetime: TokenLifetime,
        _ configuration: TestQueue.Configuration = Self.configuration
    ) -> TestQueue {
        var policy = server.policy()
        policy.lifetime = server.knownLifetime(lifetime)
        return TestQueue(transport: server, credential: 0, policy: policy, configuration: configuration, scheduler: scheduler)
    }

    /// Margin zero: a request submitted at exactly the expiry instant is never sent with the
    /// expired token; one submitted a nanosecond before is sent (valid at its send), rejected,
    /// and sent again once with the new one: one refresh in all, one completion each.
    @Test func marginZeroAtTheExpiryInstantNothingIsSentWithTheExpiredToken() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime(margin: .zero))
        harness.advance(.seconds(60) - .nanoseconds(1))
        #expect(harness.queue.credentialFreshness == .fresh, "margin zero: never stale")
        harness.submit("before")
        harness.advance(.nanoseconds(1))
        harness.submit("at")
        harness.run()
        #expect(harness.sendTimes("at").isEmpty, "sent at the expiry instant")
        harness.advance(.seconds(1))
        #expect(harness.server.sends.filter { $0.name == "at" }.map(\.credential) == [1])
        #expect(harness.server.sends.filter { $0.name == "before" }.map(\.credential) == [0, 1])
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.recorder.results("at").count == 1 && harness.recorder.only("at")?.isSuccess == true)
        #expect(harness.recorder.results("before").count == 1 && harness.recorder.only("before")?.isSuccess == true)
    }

    /// The refresh hands out a token already expired (its expiry in the past): the queue must not
    /// send it and must not refresh in a loop: the refresh limit ends it, the request fails once.
    @Test func aRefreshThatReturnsAnExpiredTokenEndsAtTheRefreshLimitNotInALoop() {
        let harness = Harness(
            Self.configuration,
            lifetime: TokenLifetime(lifetime: .seconds(-1), firstExpiresIn: .seconds(-3600)))
        harness.submit("a")
        harness.advance(.seconds(10))
        #expect(harness.server.sends.isEmpty, "an expired token was sent")
        #expect(harness.server.refreshCalls == 3, "refreshes at \(self.refreshStarts(harness))")
        #expect(harness.recorder.results("a").map(\.errorName) == ["refreshLimitExceeded"])
        #expect(harness.queue.unfinishedCount == 0)
    }

    /// The same with room in the window: the refreshes are not spaced by `retryInterval` (only
    /// background ones are); they run back to back until the limit. Records the count.
    @Test func anExpiredOnArrivalTokenWithARoomyWindowRefreshesBackToBackUpToTheLimit() {
        let harness = Harness(
            Self.roomy,
            lifetime: TokenLifetime(lifetime: .seconds(-1), firstExpiresIn: .seconds(-3600)))
        harness.submit("a")
        harness.advance(.seconds(10))
        let starts = self.refreshStarts(harness)
        #expect(harness.server.sends.isEmpty, "an expired token was sent")
        #expect(starts.count == 100, "refreshes: \(starts.count), last at \(starts.last.map { "\($0)" } ?? "-")")
        #expect(harness.recorder.results("a").map(\.errorName) == ["refreshLimitExceeded"])
    }

    /// `expiry(of:)` answering the clock's extremes: `distantFuture` is fresh forever (no
    /// refresh, no trap); the origin (0 ns, "distant past") is expired: refreshed before any send.
    @Test func anExpiryAtTheClocksExtremesNeitherTrapsNorSendsExpired() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler)
        var future = server.policy()
        future.lifetime = .init(refreshMargin: .seconds(1_000_000_000)) { _ in .distantFuture }
        let farQueue = TestQueue(transport: server, credential: 0, policy: future, scheduler: scheduler)
        #expect(farQueue.credentialFreshness == .fresh)
        let recorder = Recorder()
        farQueue.submit(Call(name: "far"), completion: recorder.completion("far"))
        scheduler.advance(by: .seconds(1))
        #expect(recorder.only("far")?.isSuccess == true)
        #expect(server.refreshCalls == 0)

        var past = server.policy()
        past.lifetime = .init(refreshMargin: .zero) { token in token == 0 ? MonotonicInstant(nanoseconds: 0) : nil }
        let pastQueue = TestQueue(transport: server, credential: 0, policy: past, scheduler: scheduler)
        #expect(pastQueue.credentialFreshness == .expired)
        pastQueue.submit(Call(name: "past"), completion: recorder.completion("past"))
        scheduler.advance(by: .seconds(1))
        #expect(server.sends.filter { $0.name == "past" }.map(\.credential) == [1])
        #expect(recorder.results("past").count == 1 && recorder.only("past")?.isSuccess == true)
    }

    /// A background refresh that never answers while the token expires: requests after the
    /// expiry are never sent with it; they fail once each when the refresh times out (30 s).
    @Test func aRefreshThatNeverAnswersAcrossTheExpiryFailsParkedRequestsOnceAtItsTimeout() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshLatency = nil }
        harness.advance(.seconds(50))
        harness.submit("stale")
        harness.advance(.seconds(11))
        harness.submit("a")
        harness.submit("b")
        harness.advance(.seconds(18))  // 79 s
        #expect(harness.recorder.results("a").isEmpty, "failed before the refresh timed out")
        harness.advance(.seconds(2))  // 81 s: timed out at 80 s
        #expect(harness.sendTimes("a").isEmpty && harness.sendTimes("b").isEmpty, "sent with the expired token")
        #expect(harness.recorder.results("a").map(\.errorName) == ["refreshTimedOut"])
        #expect(harness.recorder.results("b").map(\.errorName) == ["refreshTimedOut"])
        #expect(harness.recorder.results("stale").count == 1 && harness.recorder.only("stale")?.isSuccess == true)
        #expect(harness.queue.unfinishedCount == 0)
    }

    /// An outage fills the refresh window with failed background refreshes (limit 3 a minute,
    /// retried every 5 s; the token's first refresh is paid by its lifetime, its three retries
    /// fill the window); the token expires while it is full: the waiting requests fail once
    /// each with `refreshLimitExceeded` (never sent expired), and once the window has room the
    /// next request refreshes and goes out.
    @Test func backgroundRefreshesFillingTheWindowThenTheExpiryFailEachRequestOnceAndRecover() {
        let harness = Harness(
            Self.configuration, lifetime: TokenLifetime(margin: .seconds(30), retryInterval: .seconds(5)))
        harness.server.state.withLock { $0.refreshScript = [false, false, false, false, true] }
        harness.advance(.seconds(30))
        for second in 30..<60 {
            harness.submit("r\(second)")
            harness.advance(.seconds(1))
        }
        // Each retry 5 s after the failure (20 ms after its start); jitter 0.
        #expect(self.refreshStarts(harness)
                == [.seconds(30), .milliseconds(35_020), .milliseconds(40_040), .milliseconds(45_060)])
        for second in 30..<60 { #expect(harness.recorder.only("r\(second)")?.isSuccess == true, "r\(second)") }
        harness.advance(.seconds(1))  // 61 s: expired, window full until 95.02 s
        harness.submit("late")
        harness.run()
        #expect(harness.sendTimes("late").isEmpty)
        #expect(harness.recorder.results("late").map(\.errorName) == ["refreshLimitExceeded"])
        harness.advance(.seconds(35))  // 96 s
        harness.submit("recovered")
        harness.advance(.seconds(1))
        #expect(harness.server.sends.filter { $0.name == "recovered" }.map(\.credential) == [1])
        #expect(harness.recorder.only("recovered")?.isSuccess == true)
    }

    /// Shutdown with a background retry armed (the first background refresh failed): the retry
    /// never calls the refresh endpoint; each request ended once.
    @Test func shutdownWithABackgroundRetryArmedRefreshesNothingMore() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshScript = [false] }
        harness.advance(.seconds(50))
        harness.submit("stale", latency: .seconds(5))
        harness.advance(.seconds(1))  // refresh failed at 50.02 s; retry armed for 55.02 s
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.queue.shutdown() == 1)
        harness.advance(.seconds(30))
        #expect(harness.server.refreshCalls == 1, "refreshed after shutdown")
        #expect(harness.recorder.results("stale").map(\.errorName) == ["shutDown"])
    }

    /// Cancelling every request with a background retry armed: the credential is still stale, so
    /// the retry may refresh (documented: background refreshes go on without traffic); each
    /// request ends once, cancelled.
    @Test func cancellingEveryRequestWithABackgroundRetryArmedEndsEachOnce() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshScript = [false, true] }
        harness.advance(.seconds(50))
        let handle = harness.submit("stale", latency: .seconds(5))
        harness.advance(.seconds(1))
        #expect(handle.cancel())
        harness.advance(.seconds(30))
        #expect(harness.recorder.results("stale").map(\.errorName) == ["cancelled"])
        #expect(harness.queue.unfinishedCount == 0)
    }

    /// A queue released (its last reference dropped, no request left) while a background retry
    /// is armed is freed and calls the refresh endpoint no more: the retry holds it weakly. (The
    /// attack found it kept alive, calling every `retryInterval` until the token expired.)
    @Test func aReleasedQueueWithABackgroundRetryArmedStopsRefreshing() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler)
        let start = scheduler.now
        let lifetime = TokenLifetime(margin: .seconds(50), retryInterval: .seconds(5))
        server.expireTokens(lifetime, from: start)
        server.state.withLock { $0.refreshScript = [false] }
        weak var observer: TestQueue?
        do {
            let queue = Self.releasableQueue(server, scheduler, lifetime, Self.roomy)
            observer = queue
            let recorder = Recorder()
            queue.submit(Call(name: "stale"), completion: recorder.completion("stale"))
            scheduler.advance(by: .seconds(1))  // stale from 10 s: nothing yet
            scheduler.advance(by: .seconds(10))  // 11 s: no traffic; idle queue
            queue.submit(Call(name: "stale2"), completion: recorder.completion("stale2"))
            scheduler.advance(by: .seconds(1))  // background refresh at 11 s failed; retry armed
            #expect(recorder.only("stale2")?.isSuccess == true)
            #expect(queue.unfinishedCount == 0)
        }
        let callsAtRelease = server.refreshCalls
        #expect(callsAtRelease == 1)
        scheduler.advance(by: .seconds(60))
        #expect(
            server.refreshCalls == callsAtRelease,
            "a released queue called refresh \(server.refreshCalls - callsAtRelease) more times at \(server.state.withLock { $0.refreshStartedAt }.map { start.duration(to: $0) })")
        #expect(observer == nil, "the released queue is still alive")
    }

    /// Same, released right after `shutdown()`, which "ends every request, after which it can be
    /// released": the shutdown cancels the armed retry, and nothing keeps the queue alive.
    @Test func aQueueShutDownAndReleasedWithARetryArmedIsFreedAtOnce() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler)
        let lifetime = TokenLifetime()
        server.expireTokens(lifetime, from: scheduler.now)
        server.state.withLock { $0.refreshScript = [false] }
        weak var observer: TestQueue?
        do {
            let queue = Self.releasableQueue(server, scheduler, lifetime)
            observer = queue
            scheduler.advance(by: .seconds(50))
            queue.submit(Call(name: "stale"), completion: { _ in })
            scheduler.advance(by: .seconds(1))  // failed background refresh; retry armed at 55.02 s
            _ = queue.shutdown()
            scheduler.runUntilIdle()
        }
        #expect(observer == nil, "kept alive by the background retry timer after shutdown()")
        scheduler.advance(by: .seconds(10))
        #expect(observer == nil)
        #expect(server.refreshCalls == 1)
    }

    /// Released during a background refresh that then succeeds: nothing crashes, the queue goes
    /// away once the answer is applied, and no second refresh starts.
    @Test func aQueueReleasedDuringABackgroundRefreshIsFreedAfterItsAnswer() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler)
        let lifetime = TokenLifetime()
        server.expireTokens(lifetime, from: scheduler.now)
        server.state.withLock { $0.refreshLatency = .seconds(5) }
        weak var observer: TestQueue?
        do {
            let queue = Self.releasableQueue(server, scheduler, lifetime)
            observer = queue
            scheduler.advance(by: .seconds(50))
            queue.submit(Call(name: "stale"), completion: { _ in })
            scheduler.advance(by: .seconds(1))  // refresh runs until 55 s
        }
        scheduler.advance(by: .seconds(10))
        #expect(observer == nil)
        #expect(server.refreshCalls == 1)
    }

    /// Requests in flight with token 0 are answered 401 after the background refresh installed
    /// token 1: each is sent again once with token 1, and no second refresh starts.
    @Test func oldTokenRejectionsAfterTheNewOneArrivedAreResentOnceWithoutRefreshing() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.advance(.seconds(55))
        for index in 0..<4 { harness.submit("slow\(index)", latency: .seconds(10)) }  // answered at 65 s
        harness.advance(.seconds(20))
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.server.rejected == 4)
        for index in 0..<4 {
            #expect(harness.server.sends.filter { $0.name == "slow\(index)" }.map(\.credential) == [0, 1])
            #expect(harness.recorder.results("slow\(index)").count == 1)
            #expect(harness.recorder.only("slow\(index)")?.isSuccess == true)
        }
        #expect(harness.queue.statistics.resentWithoutRefresh == 4)
    }

    /// The unique gate and the refresh's slot: a unique request queued while a long request holds
    /// the only slot meets the expiry; the refresh starts at once; the unique one runs alone with
    /// the new token, after the long one ends.
    @Test func aUniqueRequestQueuedAcrossTheExpiryRunsAloneWithTheNewToken() {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 1, agingInterval: nil), lifetime: TokenLifetime())
        harness.advance(.seconds(45))
        harness.submit("long", latency: .seconds(20))  // until 65 s; rejected then
        harness.submit("login", priority: .unique)
        harness.advance(.seconds(16))  // 61 s: expired
        harness.submit("after")
        harness.run()
        #expect(self.refreshStarts(harness) == [.seconds(50), .seconds(61)] || self.refreshStarts(harness) == [.seconds(61)],
            "refreshes at \(self.refreshStarts(harness))")
        harness.advance(.seconds(60))
        #expect(harness.server.sends.filter { $0.name == "login" }.map(\.credential) == [1])
        #expect(harness.server.maximumInFlight == 1)
        for tag in ["long", "login", "after"] {
            #expect(harness.recorder.results(tag).count == 1 && harness.recorder.only(tag)?.isSuccess == true, "\(tag)")
        }
        #expect(harness.server.sends.allSatisfy { send in
            harness.server.state.withLock { $0.expiries[send.credential].map { send.at < $0 } ?? true }
        }, "a request was sent with a token already expired at its send")
    }

    /// A 401 while the token is fresh (revoked early, before the margin): one refresh, the request
    /// sent again once with the new token, whose expiry is then known (fresh).
    @Test func aRejectionBeforeTheMarginRefreshesOnceAndLearnsTheNewExpiry() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.advance(.seconds(20))
        harness.server.expireToken()
        harness.submit("a")
        harness.submit("b")
        harness.advance(.seconds(1))
        #expect(harness.server.refreshCalls == 1)
        for tag in ["a", "b"] {
            #expect(harness.server.sends.filter { $0.name == tag }.map(\.credential) == [0, 1])
            #expect(harness.recorder.results(tag).count == 1 && harness.recorder.only(tag)?.isSuccess == true)
        }
        #expect(harness.queue.credentialFreshness == .fresh)
        harness.advance(.seconds(50))  // 71 s: token 1 (issued at 20.02 s) is stale from 70.02 s
        #expect(harness.queue.credentialFreshness == .stale)
    }

    /// Six queues sharing a coordinator go stale together: one refresh for all, each adopts
    /// token 1, nothing is rejected and every request ends once.
    @Test func sixQueuesSharingACoordinatorGoingStaleTogetherRefreshOnce() {
        let scheduler = VirtualScheduler()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(5))
        let first = Harness(Self.configuration, scheduler: scheduler, coordinator: coordinator, lifetime: TokenLifetime())
        let harnesses = [first] + (1..<6).map { _ in
            Harness(Self.configuration, scheduler: scheduler, coordinator: coordinator, lifetime: TokenLifetime(),
                server: first.server)
        }
        first.advance(.seconds(50))
        for (index, harness) in harnesses.enumerated() { harness.submit("q\(index)") }
        first.advance(.seconds(1))
        #expect(first.server.refreshCalls == 1)
        for (index, harness) in harnesses.enumerated() {
            #expect(harness.queue.credentialGeneration == 1, "queue \(index)")
            #expect(harness.recorder.results("q\(index)").count == 1 && harness.recorder.only("q\(index)")?.isSuccess == true)
        }
        // Across the expiry with traffic: still one refresh per generation, nothing rejected.
        for step in 0..<140 {
            harnesses[step % 6].submit("t\(step)")
            first.advance(.milliseconds(500))
        }
        #expect(first.server.rejected == 0)
        #expect(first.server.refreshCalls == 2, "refreshes at \(self.refreshStarts(first))")
        for step in 0..<140 { #expect(harnesses[step % 6].recorder.results("t\(step)").count == 1) }
    }
    /// A request parked at the expiry (the refresh never answers) times out on its own deadline:
    /// it ends once, `timedOut`; the refresh's later timeout does not end it again.
    @Test func aParkedRequestTimingOutAcrossTheExpiryEndsOnce() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshLatency = nil }
        harness.advance(.seconds(61))
        harness.submit("a", timeout: .seconds(2))
        harness.submit("b")
        harness.advance(.seconds(60))
        #expect(harness.recorder.results("a").map(\.errorName) == ["timedOut"])
        #expect(harness.recorder.results("b").map(\.errorName) == ["refreshTimedOut"])
        #expect(harness.server.sends.isEmpty, "sent with the expired token")
    }

    /// A request waiting out a retry backoff across the expiry is not sent again with the expired
    /// token: its retry waits for the refresh and goes out with the new one.
    @Test func aRetryFallingDueAfterTheExpiryIsSentWithTheNewToken() {
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 4, retryBackoff: RetryBackoff(initial: .seconds(12), maximum: .seconds(12)),
                agingInterval: nil),
            lifetime: TokenLifetime(margin: .zero))
        harness.advance(.seconds(55))
        harness.submit("flaky", statuses: [503, 200])  // answered 503 at 55.01 s; retried at 67.01 s
        harness.advance(.seconds(20))
        #expect(harness.server.sends.filter { $0.name == "flaky" }.map(\.credential) == [0, 1])
        #expect(harness.server.rejected == 0)
        #expect(harness.recorder.results("flaky").count == 1 && harness.recorder.only("flaky")?.isSuccess == true)
        #expect(harness.server.refreshCalls == 1)
    }

    /// An outage seen by six queues sharing a coordinator: how often is the credential service
    /// called? Each queue retries on its own interval, and a failed lease passes to the next
    /// waiter, which calls again: at most once per queue per interval (documented; single flight
    /// holds for refreshes that succeed, not for the retries of an outage).
    @Test func sixQueuesInAnOutageCallTheFailingServiceAtMostOncePerQueuePerInterval() {
        let scheduler = VirtualScheduler()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(5))
        let lifetime = TokenLifetime(margin: .seconds(30), retryInterval: .seconds(5))
        let first = Harness(Self.roomy, scheduler: scheduler, coordinator: coordinator, lifetime: lifetime)
        first.server.state.withLock { $0.refreshScript = [false] }
        let harnesses = [first] + (1..<6).map { _ in
            Harness(Self.roomy, scheduler: scheduler, coordinator: coordinator, lifetime: lifetime, server: first.server)
        }
        first.advance(.seconds(30))
        for (index, harness) in harnesses.enumerated() { harness.submit("q\(index)") }
        first.advance(.seconds(20))  // 30 s .. 50 s: four intervals of 5 s
        let starts = self.refreshStarts(first)
        for (index, harness) in harnesses.enumerated() {
            #expect(harness.recorder.results("q\(index)").count == 1 && harness.recorder.only("q\(index)")?.isSuccess == true)
        }
        #expect(
            starts.count <= harnesses.count * 5,
            "the fleet called the failing refresh \(starts.count) times in 20 s, more than once per queue per interval: \(starts)")
    }
    /// A queue released while its background refresh is in flight, that refresh then failing,
    /// arms no retry that keeps it calling the refresh endpoint with nobody left to use it.
    @Test func aQueueReleasedDuringABackgroundRefreshThatFailsStopsRefreshing() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler)
        let start = scheduler.now
        let lifetime = TokenLifetime()
        server.expireTokens(lifetime, from: start)
        server.state.withLock {
            $0.refreshScript = [false]
            $0.refreshLatency = .seconds(1)
        }
        weak var observer: TestQueue?
        do {
            let queue = Self.releasableQueue(server, scheduler, lifetime, Self.roomy)
            observer = queue
            scheduler.advance(by: .seconds(50))
            queue.submit(Call(name: "stale"), completion: { _ in })
            scheduler.advance(by: .milliseconds(500))  // the refresh runs until 51 s; the request has ended
            #expect(queue.unfinishedCount == 0)
        }
        scheduler.advance(by: .seconds(30))
        let starts = server.state.withLock { $0.refreshStartedAt }.map { start.duration(to: $0) }
        #expect(starts == [.seconds(50)], "the released queue refreshed at \(starts)")
        #expect(observer == nil)
    }

    /// Six queues on one coordinator in an outage across the expiry: no request is sent with the
    /// expired token and each ends once (successes while valid, `refreshFailed` after).
    @Test func sixQueuesInAnOutageAcrossTheExpiryEndEachRequestOnceAndNeverSendExpired() {
        let scheduler = VirtualScheduler()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(5))
        let first = Harness(Self.roomy, scheduler: scheduler, coordinator: coordinator, lifetime: TokenLifetime())
        first.server.state.withLock { $0.refreshScript = [false] }
        let harnesses = [first] + (1..<6).map { _ in
            Harness(Self.roomy, scheduler: scheduler, coordinator: coordinator, lifetime: TokenLifetime(),
                server: first.server)
        }
        first.advance(.seconds(45))
        for step in 0..<60 {
            harnesses[step % 6].submit("t\(step)")
            first.advance(.milliseconds(500))
        }
        first.advance(.seconds(60))
        let expiry = first.start.advanced(by: .seconds(60))
        #expect(first.server.sends.allSatisfy { $0.at < expiry }, "sent with the expired token")
        #expect(first.server.rejected == 0)
        for step in 0..<60 {
            let results = harnesses[step % 6].recorder.results("t\(step)")
            #expect(results.count == 1, "t\(step): \(results.count) completions")
            let submitted = first.start.advanced(by: .seconds(45) + .milliseconds(500 * step))
            if submitted < expiry {
                #expect(results.first?.isSuccess == true, "t\(step) failed while the token was valid")
            } else {
                #expect(results.first?.errorName == "refreshFailed", "t\(step): \(String(describing: results.first?.errorName))")
            }
        }
        for harness in harnesses { #expect(harness.queue.unfinishedCount == 0) }
    }
}
