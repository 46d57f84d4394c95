import AsyncHTTPClient
import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import Testing

/// Servers that would make a naive client loop forever, stopped with a clear error.
@Suite("Loop guards end to end", .serialized)
struct LoopGuardTests {
    @Test("a server that rejects every token: the loop guards end each request, the server sees bounded traffic")
    func anAlways401ServerIsStopped() async throws {
        var behaviour = ServerBehaviour()
        behaviour.rejectEveryToken = true
        let configuration = HTTPQueue.Configuration(
            maximumConcurrent: 4, maximumRedirects: 2, refreshLimit: 3, refreshWindow: .seconds(60), agingInterval: nil)
        let total = 10
        try await EndToEnd.run(behaviour: behaviour, configuration: configuration) { e2e in
            let results = Completions<RequestResult<HTTPResponse>>()
            for index in 0..<total {
                e2e.queue.submit(e2e.item(index), timeout: .seconds(20)) { results.record(index, $0) }
            }
            #expect(await results.wait(for: total, timeout: .seconds(20)), "only \(results.count) of \(total) ended")
            await e2e.settle()

            #expect(results.duplicates.isEmpty, "completed more than once: \(results.duplicates)")
            for (index, result) in results.values {
                switch result {
                case .failure(.tooManyRedirects(limit: 2)):
                    #expect(result.error!.description.contains("maximumRedirects"))
                case .failure(.refreshLimitExceeded(limit: 3, window: .seconds(60))):
                    #expect(result.error!.description.contains("refreshLimit"))
                default:
                    Issue.record("request \(index): \(result); expected a loop guard's error")
                }
            }
            let counts = e2e.server.counts
            #expect(counts.refreshCalls <= 3, "refresh calls: \(counts.refreshCalls) (refreshLimit 3)")
            #expect(counts.refreshCalls >= 1)
            for index in 0..<total {
                let sends = counts.arrivals(of: "items").count { $0.id == "\(index)" }
                #expect((1...3).contains(sends), "request \(index) reached the server \(sends) times (maximumRedirects 2)")
            }
        }
    }

    @Test("an HTTP redirect loop ends with AsyncHTTPClient's redirect error, not retried",
          arguments: [true, false])
    func aRedirectLoopIsStopped(allowCycles: Bool) async throws {
        let configuration = HTTPQueue.Configuration(maximumConcurrent: 2, agingInterval: nil)
        let client = EndToEnd.clientConfiguration(redirects: .follow(max: 5, allowCycles: allowCycles))
        try await EndToEnd.run(configuration: configuration, client: client) { e2e in
            let result = await e2e.queue.response(
                for: HTTPRequest(url: e2e.server.url("/loop/a")), timeout: .seconds(120))
            let expected: HTTPClientError = allowCycles ? .redirectLimitReached : .redirectCycleDetected
            guard case .failure(.failed(let error)) = result else {
                Issue.record("\(result); expected the redirect error")
                return
            }
            #expect(error as? HTTPClientError == expected, "\(error)")
            let hits = e2e.server.counts.arrivals(of: "loop").count
            // A cycle is seen on the third URL; a limit of 5 allows 6 requests. Never retried.
            #expect(hits == (allowCycles ? 6 : 2), "the server saw \(hits) requests of the loop")
            #expect(e2e.queue.statistics.sends == 1)
        }
    }
}
