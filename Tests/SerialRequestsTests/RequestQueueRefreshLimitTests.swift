import SerialCore
import SerialRequests
import SerialTesting
import Testing

/// `refreshLimit` with a known credential lifetime, on virtual time, under the default limit
/// (3 refreshes a minute): a credential that stayed fresh for at least `retryInterval` pays for
/// its own refresh, ahead of or at its expiry, which the limit does not count; refreshes forced
/// by a rejection, of a credential never fresh that long, or again for the same credential, count.
@Suite("RequestQueue refresh limit with a known lifetime")
struct RequestQueueRefreshLimitTests {
    /// The default limit and window (3 per 60 s).
    static let configuration = TestQueue.Configuration(maximumConcurrent: 4, agingInterval: nil)

    /// Tokens that last 2 s, margin 500 ms, retryInterval 500 ms: each fresh for 1.5 s.
    static let twoSecondTokens = TokenLifetime(
        lifetime: .seconds(2), firstExpiresIn: .seconds(2), margin: .milliseconds(500), retryInterval: .milliseconds(500))

    /// A request every `every` until `until` from the start.
    func traffic(_ harness: Harness, every: Duration, until: Duration, tag: String = "r") -> [String] {
        var tags: [String] = []
        while harness.elapsed < until {
            let name = "\(tag)\(tags.count)"
            harness.submit(name)
            tags.append(name)
            harness.advance(every)
        }
        return tags
    }

    /// Tokens that last 2 s (margin 500 ms, retryInterval 500 ms: fresh 1.5 s each), requests
    /// every 100 ms for two minutes: about 60 refreshes, each ahead of expiry, none refused,
    /// none rejected, every request served. Before the rule, the fourth was refused.
    @Test func shortLivedTokensAreRefreshedAheadForAsLongAsTheyLastUnderTheDefaultLimit() {
        let harness = Harness(Self.configuration, lifetime: Self.twoSecondTokens)
        let tags = self.traffic(harness, every: .milliseconds(100), until: .seconds(120))
        harness.advance(.seconds(1))
        let failed = tags.filter { harness.recorder.only($0)?.isSuccess != true }
        let first = failed.first.map { "\($0): \(harness.recorder.only($0)?.errorName ?? "no completion")" } ?? "-"
        #expect(failed.count == 0, "not served, first \(first)")
        #expect(harness.server.rejected == 0)
        #expect(harness.server.refreshCalls >= 75, "refreshes: \(harness.server.refreshCalls)")
        #expect(harness.queue.statistics.refreshesRefused == 0)
        #expect(harness.queue.statistics.refreshesAhead == harness.server.refreshCalls)
    }

    /// The same tokens while the queue is idle between bursts: each burst meets an expired token,
    /// parks, and one refresh (paid for by the token's lifetime) serves it.
    @Test func expiredWhileIdleTokensAreRefreshedAtEachBurstUnderTheDefaultLimit() {
        let harness = Harness(Self.configuration, lifetime: Self.twoSecondTokens)
        var tags: [String] = []
        for burst in 0..<10 {
            harness.advance(.seconds(3))  // the token has expired
            for index in 0..<3 {
                harness.submit("b\(burst)-\(index)")
                tags.append("b\(burst)-\(index)")
            }
            harness.advance(.milliseconds(100))
        }
        #expect(tags.allSatisfy { harness.recorder.only($0)?.isSuccess == true },
                "\(tags.compactMap { harness.recorder.only($0)?.errorName })")
        #expect(harness.server.refreshCalls == 10)
        #expect(harness.server.rejected == 0)
    }

    /// The loop guard holds: a server that rejects every credential, however new, meets the
    /// limit after 3 refreshes, with a long lifetime known (each new token fresh for 60 s).
    @Test func aServerThatRejectsEveryNewCredentialStillMeetsTheLimit() {
        let harness = Harness(
            TestQueue.Configuration(maximumConcurrent: 4, maximumRedirects: 10, agingInterval: nil),
            lifetime: TokenLifetime())
        harness.submit("doomed", statuses: [401])
        harness.advance(.seconds(10))
        #expect(harness.server.refreshCalls == 3)
        #expect(harness.recorder.results("doomed").map(\.errorName) == ["refreshLimitExceeded"])
    }

    /// Tokens fresh for less than `retryInterval` (a margin too long for them: 1.5 s of a 2 s
    /// token, retryInterval 1 s) do not pay for their refresh: the limit counts them, and the
    /// fourth within a minute is refused; the requests waiting at that expiry fail once each.
    @Test func tokensFreshForLessThanTheRetryIntervalCountAgainstTheLimit() {
        let lifetime = TokenLifetime(
            lifetime: .seconds(2), firstExpiresIn: .seconds(2), margin: .milliseconds(1500),
            retryInterval: .seconds(1))
        let harness = Harness(Self.configuration, lifetime: lifetime)
        let tags = self.traffic(harness, every: .milliseconds(100), until: .seconds(20))
        #expect(harness.server.refreshCalls == 3, "refreshes: \(harness.server.refreshCalls)")
        #expect(tags.contains { harness.recorder.only($0)?.errorName == "refreshLimitExceeded" })
        #expect(harness.server.rejected == 0, "never sent expired")
    }

    /// A credential pays for one refresh, not for its retries: in an outage (token fresh for
    /// 50 s, stale from 50 s) the first background refresh is not counted, the next three are,
    /// and the fifth attempt for the same token waits for the window.
    @Test func aCredentialPaysForOneRefreshNotForItsRetries() {
        let harness = Harness(
            Self.configuration, lifetime: TokenLifetime(margin: .seconds(10), retryInterval: .seconds(2)))
        harness.server.state.withLock { $0.refreshScript = [false] }
        harness.advance(.seconds(50))
        _ = self.traffic(harness, every: .seconds(1), until: .seconds(59))
        // Retried 2 s after each failure (20 ms after its start): 50, 52.02, 54.04, 56.06; then full.
        #expect(RequestQueueCredentialLifetimeTests().refreshStarts(harness)
                == [.seconds(50), .milliseconds(52_020), .milliseconds(54_040), .milliseconds(56_060)])
    }
}
