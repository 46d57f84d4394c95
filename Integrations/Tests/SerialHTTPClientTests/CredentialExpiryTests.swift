import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import Testing

/// Seed 003's story against a real server: tokens that really expire, one refresh for a burst.
@Suite("Credential expiry end to end", .serialized)
struct CredentialExpiryTests {
    enum Expiry: String, CaseIterable, Sendable {
        /// The token serves 50 requests, then the server rejects it.
        case afterRequests
        /// The first token is rejected 100 ms after the server started.
        case afterTime
    }

    static let burst = 50

    @Test("50 concurrent requests meet an expired token: the server sees one refresh, all re-sent and succeed",
          arguments: Expiry.allCases)
    func fiftyConcurrentRequestsShareOneRefresh(expiry: Expiry) async throws {
        var behaviour = ServerBehaviour()
        // The refresh answers once the client has met every expiry of the burst, whatever the load.
        behaviour.holdsRefresh = true
        switch expiry {
        case .afterRequests: behaviour.tokenRequestLimit = Self.burst
        case .afterTime: behaviour.firstTokenLifetime = .milliseconds(100)
        }
        let configuration = HTTPQueue.Configuration(maximumConcurrent: Self.burst + 1, agingInterval: nil)
        try await EndToEnd.run(behaviour: behaviour, configuration: configuration) { e2e in
            switch expiry {
            case .afterRequests:
                // The token serves a first burst, then expires (its 50 uses spent).
                let warmUp = Completions<RequestResult<HTTPResponse>>()
                for index in 0..<Self.burst {
                    e2e.queue.submit(e2e.item(1000 + index), timeout: .seconds(20)) { warmUp.record(index, $0) }
                }
                #expect(await warmUp.wait(for: Self.burst, timeout: .seconds(30)), "warm-up: \(warmUp.count) of 50")
                #expect(warmUp.values.values.allSatisfy { $0.error == nil })
            case .afterTime:
                // No warm-up: on a loaded machine it could outlast the token. The sleep lasts at
                // least its duration, so the token has expired when the burst starts.
                try await Task.sleep(for: .milliseconds(150))
            }

            let results = Completions<RequestResult<HTTPResponse>>()
            for index in 0..<Self.burst {
                e2e.queue.submit(e2e.item(index, delayMilliseconds: 20), timeout: .seconds(20)) {
                    results.record(index, $0)
                }
            }
            let queue = e2e.queue
            #expect(await eventually(within: .seconds(30)) { queue.statistics.expiries == Self.burst },
                    "the client met \(queue.statistics.expiries) of 50 expiries")
            e2e.server.configure { $0.holdsRefresh = false }
            #expect(await results.wait(for: Self.burst, timeout: .seconds(40)), "only \(results.count) of 50 ended")
            await e2e.settle()

            // Server side: one refresh; each request seen twice, first rejected with t0, then accepted with t1.
            let counts = e2e.server.counts
            #expect(counts.refreshCalls == 1, "refresh calls: \(counts.refreshCalls)")
            #expect(counts.tokensIssued == 1)
            let burstArrivals = counts.arrivals(of: "items").filter { (Int($0.id) ?? 0) < 1000 }
            for index in 0..<Self.burst {
                let seen = burstArrivals.filter { $0.id == "\(index)" }.map { "\($0.status) \($0.token ?? "-")" }
                #expect(seen == ["401 t0", "200 t1"], "request \(index): the server saw \(seen)")
            }
            // Client side: every request succeeded once, with the new token.
            #expect(results.duplicates.isEmpty, "completed more than once: \(results.duplicates)")
            for (index, result) in results.values {
                #expect((try? result.get().bodyText) == "\(index) t1", "request \(index): \(result)")
            }
            let statistics = e2e.queue.statistics
            #expect(statistics.refreshesStarted == 1)
            #expect(statistics.expiries == Self.burst)
            #expect(statistics.resentAfterRefresh + statistics.resentWithoutRefresh == Self.burst)
            #expect(statistics.resentAfterRefresh > 0, "no request was parked behind the refresh")
            #expect(e2e.queue.credentialGeneration == 1)
        }
    }

    @Test("the refresh endpoint fails: every parked request fails exactly once with the refresh error")
    func aFailingRefreshFailsEveryParkedRequestOnce() async throws {
        var behaviour = ServerBehaviour()
        behaviour.refreshFails = true
        behaviour.holdsRefresh = true  // answers once every request has met the expiry
        let configuration = HTTPQueue.Configuration(maximumConcurrent: Self.burst + 1, agingInterval: nil)
        try await EndToEnd.run(behaviour: behaviour, configuration: configuration) { e2e in
            e2e.server.expireToken()
            let results = Completions<RequestResult<HTTPResponse>>()
            for index in 0..<Self.burst {
                e2e.queue.submit(e2e.item(index), timeout: .seconds(20)) { results.record(index, $0) }
            }
            let queue = e2e.queue
            #expect(await eventually(within: .seconds(30)) { queue.statistics.expiries == Self.burst },
                    "the client met \(queue.statistics.expiries) of 50 expiries")
            e2e.server.configure { $0.holdsRefresh = false }
            #expect(await results.wait(for: Self.burst, timeout: .seconds(40)), "only \(results.count) of 50 ended")
            await e2e.settle()

            let counts = e2e.server.counts
            #expect(counts.refreshCalls == 1, "refresh calls: \(counts.refreshCalls)")
            #expect(counts.tokensIssued == 0)
            let seen = counts.arrivals(of: "items").map(\.id)
            #expect(seen.count == Self.burst && Set(seen).count == Self.burst, "each request once: \(seen)")
            #expect(results.duplicates.isEmpty, "completed more than once: \(results.duplicates)")
            for (index, result) in results.values {
                guard case .failure(.refreshFailed(let error)) = result else {
                    Issue.record("request \(index): \(result), not refreshFailed")
                    continue
                }
                #expect((error as? HTTPStatusError)?.status.code == 500, "request \(index): \(error)")
            }
            #expect(e2e.queue.statistics.refreshesFailed == 1)
        }
    }
}
