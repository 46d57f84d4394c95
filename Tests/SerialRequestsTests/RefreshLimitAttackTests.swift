import SerialCore
import SerialRequests
import SerialTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Attacks on the refresh limit with a known lifetime (commit 4c68d87: a credential fresh for at
/// least `retryInterval` after it arrives pays for its own first refresh ahead of or at its expiry;
/// rejections, credentials fresh for less, and retries still count). All on virtual time. Each
/// test checks, besides its own point, the promises around the rule: no request is sent with an
/// expired credential, every request ends once.
@Suite("RequestQueue refresh limit: attacks")
struct RefreshLimitAttackTests {
    /// The default limit and window (3 per 60 s).
    static let configuration = TestQueue.Configuration(maximumConcurrent: 4, agingInterval: nil)

    /// Tokens that last 2 s, margin 500 ms, retryInterval 500 ms: each fresh for 1.5 s.
    static let twoSecondTokens = TokenLifetime(
        lifetime: .seconds(2), firstExpiresIn: .seconds(2), margin: .milliseconds(500), retryInterval: .milliseconds(500))

    // MARK: Helpers

    /// The instants the refresh endpoint was called at, from the start.
    func refreshStarts(_ harness: Harness) -> [Duration] {
        harness.server.state.withLock { $0.refreshStartedAt }.map { harness.start.duration(to: $0) }
    }

    /// The most refresh calls that started within any `window` (a half-open span, as the queue counts).
    func mostRefreshesInAnyWindow(_ harness: Harness, _ window: Duration) -> Int {
        let starts = self.refreshStarts(harness)
        var most = 0
        for (index, start) in starts.enumerated() {
            most = max(most, starts[index...].prefix { $0 < start + window }.count)
        }
        return most
    }

    /// Sends made with a credential at or past its expiry (as the server issued it).
    func sendsWithExpiredCredential(_ server: SimulatedServer) -> [SimulatedServer.Send] {
        server.state.withLock { state in
            state.sends.filter { send in state.expiries[send.credential].map { send.at >= $0 } ?? false }
        }
    }

    /// Submits a request every `every` until `until` from the start; returns the tags.
    func traffic(
        _ harness: Harness, every: Duration, until: Duration, tag: String = "r", statuses: [Int] = [200],
        latency: Duration = .milliseconds(10)
    ) -> [String] {
        var tags: [String] = []
        while harness.elapsed < until {
            let name = "\(tag)\(tags.count)"
            harness.submit(name, statuses: statuses, latency: latency)
            tags.append(name)
            harness.advance(every)
        }
        return tags
    }

    /// Every tag ended exactly once.
    func expectEachEndedOnce(_ harness: Harness, _ tags: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let counts = tags.map { harness.recorder.results($0).count }
        let wrong = zip(tags, counts).filter { $0.1 != 1 }
        #expect(wrong.isEmpty, "not ended exactly once: \(wrong.prefix(5))", sourceLocation: sourceLocation)
    }

    /// `tags` by error name ("ok" for success).
    func outcomes(_ harness: Harness, _ tags: [String]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for tag in tags {
            let name = harness.recorder.only(tag).map { $0.isSuccess ? "ok" : ($0.errorName ?? "?") } ?? "none"
            counts[name, default: 0] += 1
        }
        return counts
    }

    // MARK: A server that rejects every credential

    /// Attack 1: the server rejects every request whatever its credential, though each token
    /// arrives with a long lifetime (60 s, fresh for 50 s). The loop guard must still hold: the
    /// requests end with `refreshLimitExceeded` (or `tooManyRedirects`), never success, and the
    /// refresh endpoint is called no more than the limit allows per window, plus at most the one
    /// refresh each token's lifetime pays (one per 50 s here).
    @Test func aServerRejectingEveryLongLivedCredentialMeetsTheLimit() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        let tags = self.traffic(harness, every: .seconds(1), until: .seconds(180), statuses: [401])
        harness.advance(.seconds(5))
        self.expectEachEndedOnce(harness, tags)
        let outcomes = self.outcomes(harness, tags)
        #expect(outcomes["ok"] == nil, "\(outcomes)")
        #expect((outcomes["refreshLimitExceeded"] ?? 0) > 0, "\(outcomes)")
        let most = self.mostRefreshesInAnyWindow(harness, .seconds(60))
        #expect(most <= 3 + 2, "\(most) refreshes within 60 s: \(self.refreshStarts(harness))")
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attacks 2 and 3: the same rejecting server with the short tokens the rule was made for
    /// (2 s, fresh 1.5 s), requests every 100 ms for two minutes, answered after 10 ms (attack 2)
    /// or after 1.6 s, longer than a token stays fresh (attack 3: every 401 then comes back after
    /// the token's free refresh installed the next one, so it is "sent with an older generation"
    /// and resent without any refresh counted). Does the queue stop with `refreshLimitExceeded`,
    /// or keep refreshing because every rejected token still pays for its own proactive refresh?
    /// The docs: "a server that rejects every new credential still meets the limit after 3"; here
    /// at most the limit (3) plus one a minute is allowed per window.
    @Test(arguments: [Duration.milliseconds(10), .milliseconds(1600)])
    func aServerRejectingEveryShortLivedCredentialStopsRefreshing(latency: Duration) {
        let harness = Harness(TestQueue.Configuration(maximumConcurrent: 64, agingInterval: nil), lifetime: Self.twoSecondTokens)
        let tags = self.traffic(harness, every: .milliseconds(100), until: .seconds(120), statuses: [401], latency: latency)
        harness.advance(.seconds(30))
        self.expectEachEndedOnce(harness, tags)
        let outcomes = self.outcomes(harness, tags)
        #expect(outcomes["ok"] == nil, "\(outcomes)")
        #expect(harness.queue.statistics.refreshesRefused > 0, "never met the limit: \(outcomes)")
        let most = self.mostRefreshesInAnyWindow(harness, .seconds(60))
        #expect(
            most <= 3 + 1,
            "\(most) refreshes within 60 s (\(harness.server.refreshCalls) in all, \(harness.server.rejected) rejected); outcomes \(outcomes)")
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attack 4: a credential rejected right after a free proactive refresh. Limit 1 per hour:
    /// token 0's refresh is free (stale at 50 s); the server revokes token 1 at once; the 401 it
    /// meets is counted (the one allowed), token 2 is revoked too: its 401 is refused. Then the
    /// queue must not refresh again within the hour: token 2 was rejected, its lifetime pays nothing.
    @Test
    func aCredentialRejectedAfterAFreeRefreshIsCountedAndTheRejectedOneBuysNoMore() {
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 4, maximumRedirects: 10, refreshLimit: 1, refreshWindow: .seconds(3600),
                agingInterval: nil),
            lifetime: TokenLifetime())
        harness.advance(.seconds(50))
        harness.submit("stale")  // free background refresh: token 1 at 50.02 s
        harness.advance(.seconds(1))
        #expect(harness.queue.credentialGeneration == 1)
        harness.server.expireToken()  // token 1 rejected from now on
        harness.submit("rejected1")  // 401 at 51.01 s: counted (1 of 1): token 2
        harness.advance(.seconds(1))
        #expect(harness.queue.credentialGeneration == 2)
        #expect(harness.recorder.only("rejected1")?.isSuccess == true)
        harness.server.expireToken()  // token 2 rejected too
        harness.submit("rejected2")
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("rejected2")?.errorName == "refreshLimitExceeded")
        #expect(harness.server.refreshCalls == 2, "refreshes at \(self.refreshStarts(harness))")
        // Token 2 is stale from 102.04 s: traffic through it (until 150 s, before token 3 would be stale).
        let tags = self.traffic(harness, every: .seconds(5), until: .seconds(150), tag: "later")
        #expect(
            harness.server.refreshCalls == 2,
            "the rejected token 2 was refreshed again within the hour: refreshes at \(self.refreshStarts(harness))")
        self.expectEachEndedOnce(harness, tags)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    // MARK: Rejections at the expiry

    /// Attack 5: a sequential client (one request at a time, each 700 ms, longer than the 500 ms
    /// margin) with 2 s tokens that the refresh endpoint keeps issuing. A request sent while the
    /// token is fresh is answered after it expired: 401. The queue knows the token expired (its
    /// own clock says so), yet counts that refresh as a rejection's: the fourth within a minute is
    /// refused and a request fails while every refresh would succeed.
    @Test
    func aRequestCrossingItsTokensExpiryDoesNotUseUpTheLimit() {
        let harness = Harness(Self.configuration, lifetime: Self.twoSecondTokens)
        var tags: [String] = []
        while harness.elapsed < .seconds(60) {
            let tag = "s\(tags.count)"
            tags.append(tag)
            harness.submit(tag, latency: .milliseconds(700))
            var waited = Duration.zero
            while harness.recorder.results(tag).isEmpty && waited < .seconds(10) {
                harness.advance(.milliseconds(10))
                waited += .milliseconds(10)
            }
        }
        self.expectEachEndedOnce(harness, tags)
        let outcomes = self.outcomes(harness, tags)
        #expect(
            outcomes.keys.sorted() == ["ok"],
            "\(outcomes); \(harness.server.refreshCalls) refreshes, \(harness.server.rejected) rejected, refused \(harness.queue.statistics.refreshesRefused)")
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attack 5b: the same with margin zero (documented: "refreshed at its expiry, before any
    /// request is sent with it") and a request that straddles each expiry by 5 ms.
    @Test
    func marginZeroARequestStraddlingEachExpiryDoesNotUseUpTheLimit() {
        let lifetime = TokenLifetime(
            lifetime: .seconds(2), firstExpiresIn: .seconds(2), margin: .zero, retryInterval: .milliseconds(500))
        let harness = Harness(Self.configuration, lifetime: lifetime)
        var tags: [String] = []
        for cycle in 0..<10 {
            let token = Int(harness.queue.credentialGeneration)
            guard let expiry = harness.server.expiry(of: token) else { break }
            harness.scheduler.advance(to: expiry.advanced(by: .milliseconds(-5)))
            let tag = "x\(cycle)"
            tags.append(tag)
            harness.submit(tag)
            harness.advance(.milliseconds(500))
        }
        self.expectEachEndedOnce(harness, tags)
        let outcomes = self.outcomes(harness, tags)
        #expect(
            outcomes.keys.sorted() == ["ok"],
            "\(outcomes); \(harness.server.refreshCalls) refreshes, refused \(harness.queue.statistics.refreshesRefused)")
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    // MARK: Lifetimes at the boundary

    /// Attack 6: tokens whose fresh span is exactly `retryInterval`, or a nanosecond more, pay
    /// for their own refresh: limit 1 per hour, requests every 100 ms for 30 s, all served, none
    /// refused, the refreshes at least `retryInterval` apart.
    @Test(arguments: [Duration.zero, .nanoseconds(1)])
    func tokensFreshForExactlyTheRetryIntervalPayForTheirRefresh(extra: Duration) {
        let lifetime = TokenLifetime(
            lifetime: .milliseconds(1000) + extra, firstExpiresIn: .milliseconds(1000) + extra,
            margin: .milliseconds(500), retryInterval: .milliseconds(500))
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 4, refreshLimit: 1, refreshWindow: .seconds(3600), agingInterval: nil),
            lifetime: lifetime)
        let tags = self.traffic(harness, every: .milliseconds(100), until: .seconds(30))
        harness.advance(.seconds(1))
        self.expectEachEndedOnce(harness, tags)
        #expect(self.outcomes(harness, tags).keys.sorted() == ["ok"], "\(self.outcomes(harness, tags))")
        #expect(harness.queue.statistics.refreshesRefused == 0)
        #expect(harness.server.refreshCalls >= 50, "refreshes: \(harness.server.refreshCalls)")
        let starts = self.refreshStarts(harness)
        for (earlier, later) in zip(starts, starts.dropFirst()) {
            #expect(later - earlier >= .milliseconds(500), "refreshes \(earlier) and \(later)")
        }
        #expect(harness.server.rejected == 0)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attack 6b: a nanosecond less: fresh for less than `retryInterval`, so every refresh counts.
    /// Limit 1 per hour: one refresh, then the token expires with the window full and the
    /// requests then fail with `refreshLimitExceeded`; none is sent expired, each ends once, and
    /// the refresh endpoint is called at most once more than the limit (token 0's own, paid).
    @Test func tokensFreshForANanosecondLessThanTheRetryIntervalCount() {
        let lifetime = TokenLifetime(
            lifetime: .milliseconds(1000) - .nanoseconds(1), firstExpiresIn: .seconds(60),
            margin: .milliseconds(500), retryInterval: .milliseconds(500))
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 4, refreshLimit: 1, refreshWindow: .seconds(3600), agingInterval: nil),
            lifetime: lifetime)
        let tags = self.traffic(harness, every: .milliseconds(100), until: .seconds(70))
        harness.advance(.seconds(1))
        self.expectEachEndedOnce(harness, tags)
        let outcomes = self.outcomes(harness, tags)
        #expect((outcomes["refreshLimitExceeded"] ?? 0) > 0, "\(outcomes)")
        #expect(harness.server.refreshCalls == 2, "token 0's (paid) and one counted: \(self.refreshStarts(harness))")
        #expect(harness.server.rejected == 0)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attack 7: a long-lived first token (its refresh paid), then a refresh endpoint that hands
    /// out tokens already expired (expiry in the past) or stale on arrival (lifetime shorter than
    /// the margin). Never sent expired; the limit counts every refresh after the paid one.
    @Test(arguments: [Duration.seconds(-1), .seconds(5)])
    func tokensExpiredOrStaleOnArrivalAreCountedAfterThePaidOne(lifetime: Duration) {
        let harness = Harness(
            Self.configuration, lifetime: TokenLifetime(lifetime: lifetime, margin: .seconds(10)))
        let tags = self.traffic(harness, every: .milliseconds(500), until: .seconds(100))
        harness.advance(.seconds(5))
        self.expectEachEndedOnce(harness, tags)
        let most = self.mostRefreshesInAnyWindow(harness, .seconds(60))
        #expect(most <= 3 + 1, "\(most) refreshes within 60 s: \(self.refreshStarts(harness))")
        #expect(harness.server.rejected == 0)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty, "sent with an expired token")
        // While token 0 was valid (before 60 s), nothing failed.
        for tag in tags.prefix(100) { #expect(harness.recorder.only(tag)?.isSuccess == true, "\(tag)") }
    }

    // MARK: Fleet

    /// Six harnesses on one scheduler, one server and one `LocalCredentialCoordinator`.
    func fleet(_ lifetime: TokenLifetime) -> [Harness] {
        let scheduler = VirtualScheduler()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(5))
        let first = Harness(Self.configuration, scheduler: scheduler, coordinator: coordinator, lifetime: lifetime)
        return [first] + (1..<6).map { _ in
            Harness(Self.configuration, scheduler: scheduler, coordinator: coordinator, lifetime: lifetime,
                server: first.server)
        }
    }

    /// Attack 8: six queues sharing a `LocalCredentialCoordinator`, 2 s tokens, requests round
    /// robin every 100 ms for two minutes, default limit in each queue: everything served, none
    /// refused, none rejected, never sent expired; the fleet calls the refresh endpoint about
    /// once per token (at most once per `retryInterval`).
    @Test func aFleetOnOneCoordinatorRefreshesShortTokensForAsLongAsTheyLast() {
        let fleet = self.fleet(Self.twoSecondTokens)
        let first = fleet[0]
        var tags: [(Harness, String)] = []
        while first.elapsed < .seconds(120) {
            let harness = fleet[tags.count % fleet.count]
            let tag = "f\(tags.count)"
            harness.submit(tag)
            tags.append((harness, tag))
            first.advance(.milliseconds(100))
        }
        first.advance(.seconds(1))
        let failed = tags.filter { $0.0.recorder.only($0.1)?.isSuccess != true }
        #expect(failed.isEmpty, "\(failed.count) not served, first \(failed.first.map { "\($0.1): \($0.0.recorder.results($0.1).map(\.errorName))" } ?? "-")")
        #expect(fleet.allSatisfy { $0.queue.statistics.refreshesRefused == 0 })
        #expect(first.server.rejected == 0)
        #expect(self.sendsWithExpiredCredential(first.server).isEmpty)
        let starts = self.refreshStarts(first)
        #expect(starts.count >= 60 && starts.count <= 81, "\(starts.count) fleet refreshes in 120 s")
        for (earlier, later) in zip(starts, starts.dropFirst()) {
            #expect(later - earlier >= .milliseconds(500), "fleet refreshes \(earlier) and \(later)")
        }
    }

    /// Attack 8b: the same fleet against a server that rejects every token: each queue's limit must
    /// stop it; the fleet calls the refresh endpoint at most the limit per window per queue.
    @Test func aFleetAgainstAServerRejectingEveryLongLivedTokenMeetsTheLimit() {
        let fleet = self.fleet(TokenLifetime())
        let first = fleet[0]
        var tags: [(Harness, String)] = []
        while first.elapsed < .seconds(180) {
            let harness = fleet[tags.count % fleet.count]
            let tag = "f\(tags.count)"
            harness.submit(tag, statuses: [401])
            tags.append((harness, tag))
            first.advance(.milliseconds(500))
        }
        first.advance(.seconds(5))
        #expect(tags.allSatisfy { $0.0.recorder.results($0.1).count == 1 })
        #expect(tags.allSatisfy { $0.0.recorder.only($0.1)?.isSuccess == false })
        let most = self.mostRefreshesInAnyWindow(first, .seconds(60))
        #expect(most <= 6 * 3 + 2, "\(most) fleet refreshes within 60 s")
        #expect(self.sendsWithExpiredCredential(first.server).isEmpty)
    }

    // MARK: Clock jumps

    /// Attack 9: virtual time jumps by hours at once. 2 s tokens: traffic, then three hours of
    /// silence in one step, then traffic again: the burst after the jump waits for one refresh
    /// (paid by the token's lifetime) and everything is served; no refresh ran during the silence.
    @Test func hoursOfSilenceInOneJumpThenABurstNeedsOneRefresh() {
        let harness = Harness(Self.configuration, lifetime: Self.twoSecondTokens)
        var tags = self.traffic(harness, every: .milliseconds(100), until: .seconds(10))
        let before = harness.server.refreshCalls
        harness.advance(.seconds(3 * 3600))
        #expect(harness.server.refreshCalls == before, "refreshed with nobody asking")
        tags += self.traffic(harness, every: .milliseconds(100), until: .seconds(3 * 3600 + 20), tag: "after")
        harness.advance(.seconds(1))
        self.expectEachEndedOnce(harness, tags)
        #expect(self.outcomes(harness, tags).keys.sorted() == ["ok"], "\(self.outcomes(harness, tags))")
        #expect(harness.queue.statistics.refreshesRefused == 0)
        #expect(harness.server.rejected == 0)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attack 9b: a jump of three hours during an outage with a background retry armed: the
    /// retries stop when the window is full (they do not run every interval for three hours),
    /// and after the jump, with the service back, the next request is served after one refresh.
    @Test func aJumpOfHoursDuringAnOutageRetriesAtTheLimitThenRecovers() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime(margin: .seconds(30)))
        harness.server.state.withLock { $0.refreshScript = [false] }
        harness.advance(.seconds(30))
        // Stale from 30 s: the paid attempt fails, retried every 5 s (counted): 35, 40, 45; then
        // the window is full until the token expires at 60 s.
        harness.submit("stale")
        harness.advance(.seconds(3 * 3600))
        let during = harness.server.refreshCalls
        #expect(during <= 1 + 3, "refreshes during the jump at \(self.refreshStarts(harness))")
        #expect(harness.recorder.only("stale")?.isSuccess == true)
        harness.server.state.withLock { $0.refreshScript = [true] }
        harness.submit("after")
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("after")?.isSuccess == true, "\(harness.recorder.results("after").map(\.errorName))")
        #expect(harness.server.refreshCalls == during + 1)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    // MARK: Failures then success

    /// Attack 10: an outage spends token 0's paid refresh and fills the window with counted
    /// retries while it is still valid (2 s tokens, margin 1 s, retryInterval 250 ms; token 0
    /// lasts 60 s); the service comes back; once the window has room again, the new tokens must
    /// again pay their own refreshes: two minutes of traffic, none refused, none failed.
    @Test func afterAnOutageTheNewTokensPayForTheirOwnRefreshesAgain() {
        let lifetime = TokenLifetime(
            lifetime: .seconds(2), firstExpiresIn: .seconds(60), margin: .seconds(1), retryInterval: .milliseconds(250))
        let harness = Harness(Self.configuration, lifetime: lifetime)
        // Token 0 stale from 59 s: the paid attempt and 3 counted retries fail; the next succeeds.
        harness.server.state.withLock { $0.refreshScript = [false, false, false, false, true] }
        harness.advance(.seconds(59))
        var tags = self.traffic(harness, every: .milliseconds(100), until: .seconds(60), tag: "outage")
        #expect(harness.server.refreshCalls == 4, "refreshes at \(self.refreshStarts(harness))")
        harness.advance(.seconds(65))  // 125 s: the window is empty again
        tags += self.traffic(harness, every: .milliseconds(100), until: .seconds(245), tag: "after")
        harness.advance(.seconds(1))
        self.expectEachEndedOnce(harness, tags)
        for tag in tags where tag.hasPrefix("outage") { #expect(harness.recorder.only(tag)?.isSuccess == true, "\(tag)") }
        let after = tags.filter { $0.hasPrefix("after") }
        #expect(self.outcomes(harness, after).keys.sorted() == ["ok"], "\(self.outcomes(harness, after))")
        #expect(harness.queue.statistics.refreshesRefused == 0)
        #expect(harness.server.rejected == 0)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    // MARK: Shutdown and cancel during a free refresh

    /// Attack 11: shutdown while a paid refresh for an expired token holds requests (parked) and
    /// others are in flight: each ends once with `shutDown`; the refresh's answer is ignored.
    @Test func shutdownDuringAPaidExpiryRefreshEndsEachRequestOnce() {
        let harness = Harness(Self.configuration, lifetime: TokenLifetime())
        harness.server.state.withLock { $0.refreshLatency = .seconds(10) }
        harness.advance(.seconds(45))
        harness.submit("flying", latency: .seconds(30))
        harness.advance(.seconds(16))  // 61 s: expired (nothing dispatched while stale)
        for index in 0..<3 { harness.submit("parked\(index)") }
        harness.run()
        #expect(harness.queue.parkedCount == 3)
        #expect(harness.server.refreshCalls == 1)
        #expect(harness.queue.shutdown() == 4)
        harness.advance(.seconds(60))
        for tag in ["flying", "parked0", "parked1", "parked2"] {
            #expect(harness.recorder.results(tag).map(\.errorName) == ["shutDown"], "\(tag)")
        }
        #expect(harness.queue.credentialGeneration == 0)
        #expect(harness.queue.statistics.refreshesSucceeded == 0)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attack 11b: cancelling every parked request during a paid expiry refresh, then the
    /// refresh succeeding: each ends once, cancelled; the new token pays for its own next
    /// refresh (short tokens then run two minutes under the default limit with nothing refused).
    @Test func cancellingDuringAPaidRefreshEndsEachOnceAndTheNextTokensStillPay() {
        let harness = Harness(Self.configuration, lifetime: Self.twoSecondTokens)
        harness.server.state.withLock { $0.refreshLatency = .milliseconds(300) }
        harness.advance(.seconds(3))  // token 0 expired
        let handles = (0..<3).map { harness.submit("c\($0)") }
        harness.run()
        #expect(harness.queue.parkedCount == 3)
        for handle in handles { #expect(handle.cancel()) }
        for handle in handles { #expect(!handle.cancel()) }
        harness.advance(.seconds(1))
        for index in 0..<3 { #expect(harness.recorder.results("c\(index)").map(\.errorName) == ["cancelled"]) }
        #expect(harness.queue.credentialGeneration == 1)
        let tags = self.traffic(harness, every: .milliseconds(100), until: .seconds(124))
        harness.advance(.seconds(1))
        self.expectEachEndedOnce(harness, tags)
        #expect(self.outcomes(harness, tags).keys.sorted() == ["ok"], "\(self.outcomes(harness, tags))")
        #expect(harness.queue.statistics.refreshesRefused == 0)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }
}

// MARK: - Attacks of 2026-11-29 (attack40c): older generations, clock jumps, races with the background refresh

/// Limit 1 per `window`, tokens of 60 s (margin 10 s, retryInterval 5 s), and one counted refresh
/// at 1 s (token 0 revoked by the server: the 401 is counted, 1 of 1): token 1 arrives at 1.02 s,
/// expires at 61.02 s and pays for its own refresh; the window is full for the rest of the test,
/// so any refresh that counts is refused.
extension RefreshLimitAttackTests {
    func harnessWithTheWindowFull(window: Duration = .seconds(3600)) -> Harness {
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 4, maximumRedirects: 10, refreshLimit: 1, refreshWindow: window, agingInterval: nil),
            lifetime: TokenLifetime())
        harness.advance(.seconds(1))
        harness.server.expireToken()
        harness.submit("revoked")  // 401 at 1.01 s: counted; token 1 at 1.03 s
        harness.advance(.seconds(1))
        return harness
    }

    /// Attack 12: a 401 of the replaced credential explained by its known expiry (the request was
    /// out across it) arrives after the background refresh installed the next token: it must not
    /// take the next token's paid refresh away. Token 1's request "long" (sent at 50.9 s, 10.2 s
    /// of latency) meets token 1's expiry (61.03 s); token 2 came at 51.12 s from token 1's paid
    /// background refresh. Token 2's own refresh (from 101.12 s) must be paid too: everything
    /// served until 130 s with the window full.
    @Test func a401OfTheReplacedTokenExplainedByItsExpiryKeepsTheNextTokensPay() {
        let harness = self.harnessWithTheWindowFull()
        harness.scheduler.advance(to: harness.start.advanced(by: .milliseconds(50_900)))
        harness.submit("long", latency: .milliseconds(10_200))
        harness.advance(.milliseconds(200))  // 51.1 s: token 1 stale
        var tags = ["long"] + self.traffic(harness, every: .seconds(1), until: .seconds(130), tag: "t")
        harness.advance(.seconds(1))
        tags.append("revoked")
        #expect(harness.recorder.results("long").count == 1)
        #expect(harness.server.state.withLock { $0.sends.filter { $0.name == "long" }.count } == 2, "long was resent")
        self.expectEachEndedOnce(harness, tags)
        #expect(self.outcomes(harness, tags).keys.sorted() == ["ok"], "\(self.outcomes(harness, tags))")
        #expect(harness.queue.statistics.refreshesRefused == 0)
        #expect(harness.server.refreshCalls == 3, "refreshes at \(self.refreshStarts(harness))")
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attack 13: a 401 of the replaced token 1 *not* explained by its expiry (the server rejected
    /// it at 55.9 s, token 1 valid until 61.03 s), arriving after token 2 was installed: per the
    /// rule (CredentialRefresh.credentialExpired: "the current one, which its refresh brought,
    /// buys no refresh either") token 2's own refresh counts: with the window full it is refused
    /// and, once token 2 expired (111.12 s), the requests fail with `refreshLimitExceeded`.
    @Test func a401OfTheReplacedTokenBeforeItsExpiryTakesTheNextTokensPay() {
        let harness = self.harnessWithTheWindowFull()
        harness.scheduler.advance(to: harness.start.advanced(by: .milliseconds(50_900)))
        harness.submit("long", statuses: [401, 200], latency: .seconds(5))
        harness.advance(.milliseconds(200))
        let tags = self.traffic(harness, every: .seconds(1), until: .seconds(130), tag: "t")
        harness.advance(.seconds(1))
        #expect(harness.recorder.only("long")?.isSuccess == true)
        #expect(harness.server.refreshCalls == 2, "token 2's refresh was paid: \(self.refreshStarts(harness))")
        let failedAfterExpiry = tags.filter { harness.recorder.only($0)?.errorName == "refreshLimitExceeded" }
        #expect(!failedAfterExpiry.isEmpty, "\(self.outcomes(harness, tags))")
        self.expectEachEndedOnce(harness, tags)
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }

    /// Attack 14: the same single rejection of token 1 before its expiry (the server's doing, not
    /// the lifetime's), answered while token 1's background refresh runs (51.11 s: the request parks
    /// behind it) or 20 ms later, once it installed token 2 (51.13 s: resent). The same server,
    /// the same rejection: the outcome must not hinge on which side of the refresh's answer the
    /// 401 lands. It does: parked, token 2 keeps its pay and everything is served; resent, token 2
    /// loses it and the requests after its expiry fail with `refreshLimitExceeded`.
    @Test  // reproduced 5 of 5 before its fix (attack40c)
    func oneRejectionRacingTheBackgroundRefreshHasTheSameOutcomeOnEitherSide() {
        func run(latency: Duration) -> (refreshes: Int, outcomes: [String: Int]) {
            let harness = self.harnessWithTheWindowFull()
            harness.scheduler.advance(to: harness.start.advanced(by: .milliseconds(50_900)))
            harness.submit("long", statuses: [401, 200], latency: latency)
            harness.advance(.milliseconds(200))
            harness.submit("stale")  // 51.1 s: token 1's paid background refresh, answered at 51.12 s
            harness.advance(.milliseconds(100))
            #expect(harness.queue.credentialGeneration == 2)
            let tags = self.traffic(harness, every: .seconds(1), until: .seconds(130), tag: "t")
            harness.advance(.seconds(1))
            self.expectEachEndedOnce(harness, tags + ["long", "stale"])
            #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
            return (harness.server.refreshCalls, self.outcomes(harness, tags))
        }
        let during = run(latency: .milliseconds(211))  // 401 at 51.111 s: the refresh still runs
        let after = run(latency: .milliseconds(230))  // 401 at 51.130 s: token 2 installed
        #expect(during.refreshes == after.refreshes, "refresh calls: 401 during \(during.refreshes), after \(after.refreshes)")
        #expect(during.outcomes == after.outcomes, "401 during the refresh: \(during.outcomes); after it: \(after.outcomes)")
    }

    /// Attack 15: a clock jump with a request out across it. Window 24 h, full (limit 1). Token 1's
    /// request "jump" is out for three hours (virtual time jumps in one step); the 401 it meets
    /// is explained by token 1's expiry during it: token 1's own refresh, paid by its lifetime.
    /// Variant `submitAfter`: a request submitted after the jump, before that 401, parks and
    /// raises the paid expiry refresh first; the late 401 (of the replaced token, after its
    /// expiry) then takes nothing from token 2, whose own refresh is paid too: two minutes of
    /// traffic served.
    @Test(arguments: [false, true])
    func aRequestOutAcrossAClockJumpOfHoursIsTheLifetimesRefresh(submitAfter: Bool) {
        let harness = self.harnessWithTheWindowFull(window: .seconds(24 * 3600))
        let jump = harness.submit("jump", latency: .seconds(3 * 3600))
        var tags: [String] = []
        harness.advance(.seconds(3 * 3600 - 10))
        if submitAfter {
            harness.submit("after")
            tags.append("after")
        }
        harness.advance(.seconds(20))  // the 401 of "jump" at 3 h + 2 s
        #expect(harness.server.refreshCalls == 2, "refreshes at \(self.refreshStarts(harness))")
        #expect(harness.sendTimes("jump").count == 2, "jump was resent after its 401")
        #expect(jump.cancel(), "jump's resend (another 3 h) is not waited for")
        tags += self.traffic(harness, every: .seconds(1), until: .seconds(3 * 3600 + 130), tag: "t")
        harness.advance(.seconds(1))
        self.expectEachEndedOnce(harness, tags)
        #expect(self.outcomes(harness, tags).keys.sorted() == ["ok"], "\(self.outcomes(harness, tags))")
        #expect(harness.queue.statistics.refreshesRefused == 0)
        #expect(harness.server.refreshCalls == 4, "refreshes at \(self.refreshStarts(harness))")
        #expect(self.sendsWithExpiredCredential(harness.server).isEmpty)
    }
}
