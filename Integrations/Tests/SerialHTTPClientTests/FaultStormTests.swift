import AsyncHTTPClient
import Foundation
import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import SerialTesting
import Testing

/// Many requests against a server that fails in every way it can, exactly one completion each.
@Suite("Random server faults end to end", .serialized)
struct FaultStormTests {
    static let total = 10_000
    static let attemptTimeout: Duration = .milliseconds(100)
    static let requestTimeout: Duration = .milliseconds(250)

    @Test("10,000 requests against 500s, answers slower than the timeout and dropped connections: exactly one completion each")
    func everyRequestEndsExactlyOnce() async throws {
        let seed = ProcessInfo.processInfo.environment["FAULT_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        var behaviour = ServerBehaviour()
        behaviour.faultPercentages = (serverError: 15, slow: 10, drop: 5)
        behaviour.slowDelay = Self.attemptTimeout * 3  // slower than any attempt may wait
        let maximumRetries = 2
        let configuration = HTTPQueue.Configuration(
            maximumConcurrent: 32, maximumRetries: maximumRetries,
            retryBackoff: RetryBackoff(initial: .milliseconds(2), maximum: .milliseconds(10)), agingInterval: nil)
        let started = ContinuousClock.now
        try await EndToEnd.run(
            behaviour: behaviour, configuration: configuration, attemptTimeout: Self.attemptTimeout, seed: seed
        ) { e2e in
            var generator = SeededRandom(seed: seed)
            let results = Completions<RequestResult<HTTPResponse>>()
            let window = 128  // requests submitted and not ended, at most; their timeouts start at submit
            var cancelled: Set<Int> = []
            for index in 0..<Self.total {
                if index >= window {
                    let ready = await results.wait(for: index - window + 1, timeout: .seconds(30))
                    try #require(ready, "seed \(seed): stalled at \(results.count) of \(Self.total) completions")
                }
                let handle = e2e.queue.submit(
                    HTTPRequest(url: e2e.server.url("/fault/\(index)")),
                    priority: RequestPriority(rawValue: Int(generator.next() % 3))!,
                    timeout: Self.requestTimeout
                ) { results.record(index, $0) }
                if generator.next() % 50 == 0, handle.cancel() { cancelled.insert(index) }
            }
            let allEnded = await results.wait(for: Self.total, timeout: .seconds(30))
            try #require(allEnded, "seed \(seed): only \(results.count) of \(Self.total) requests ended")
            await e2e.settle()

            // Client side: one completion per request, and the right response for each success.
            #expect(results.duplicates.isEmpty, "seed \(seed): completed twice: \(results.duplicates.prefix(10))")
            let values = results.values
            var outcomes: [String: Int] = [:]
            for (index, result) in values {
                switch result {
                case .success(let response):
                    #expect(response.bodyText == "\(index)", "seed \(seed): request \(index) got \(response.bodyText)")
                    outcomes["success", default: 0] += 1
                case .cached: Issue.record("seed \(seed): request \(index) served from a cache there is none of")
                case .failure(let error):
                    outcomes[String(describing: error).prefix(24).description, default: 0] += 1
                    if cancelled.contains(index) { #expect(error.description == "request cancelled") }
                }
            }
            let statistics = e2e.queue.statistics
            #expect(statistics.completed == Self.total && e2e.queue.unfinishedCount == 0)
            #expect(statistics.cancelled == cancelled.count)

            // Server side: nobody was sent more than 1 + maximumRetries times, every success was
            // answered 200 by the server, and nothing is still in flight on the client.
            let counts = e2e.server.counts
            var sends: [String: Int] = [:]
            var answeredOK: Set<String> = []
            for arrival in counts.arrivals(of: "fault") {
                sends[arrival.id, default: 0] += 1
                if arrival.status == 200 { answeredOK.insert(arrival.id) }
            }
            let overSent = sends.filter { $0.value > 1 + maximumRetries }
            #expect(overSent.isEmpty, "seed \(seed): sent more than \(1 + maximumRetries) times: \(overSent.prefix(5))")
            let unexplained = values.filter { $0.value.error == nil && !answeredOK.contains("\($0.key)") }
            #expect(unexplained.isEmpty, "seed \(seed): successes the server never answered 200: \(unexplained.keys.prefix(5))")
            #expect(counts.arrivals(of: "fault").count <= statistics.sends)
            let transport = e2e.transport
            #expect(await eventually(within: .seconds(2)) { transport.requestsInFlight == 0 },
                    "seed \(seed): \(transport.requestsInFlight) HTTP requests still in flight")
            // What README's guarantee is about: ended early by the client, yet seen by the server.
            let endedEarly = values.filter {
                if case .failure(.timedOut) = $0.value { return true }
                if case .failure(.cancelled) = $0.value { return true }
                return false
            }.map { "\($0.key)" }
            let reached = endedEarly.filter { sends[$0] != nil }
            let servedAnyway = endedEarly.filter { answeredOK.contains($0) }
            print("""
                fault storm, seed \(seed): \(Self.total) requests in \(ContinuousClock.now - started); \
                server faults \(counts.faults.sorted { $0.key < $1.key }); outcomes \(outcomes.sorted { $0.key < $1.key }); \
                \(statistics.sends) sends, \(statistics.retries) retries, \(statistics.timedOut) timed out, \
                \(statistics.cancelled) cancelled, \(statistics.ignoredAnswers) late answers ignored; \
                of the \(endedEarly.count) requests that ended timed out or cancelled, \(reached.count) had reached the \
                server and \(servedAnyway.count) were answered 200 by it
                """)
        }
    }
}
