// The demo's requests scene (seed 003) against a real HTTP server on loopback: a Hummingbird
// server on 127.0.0.1 whose token expires mid-burst, AsyncHTTPClient under a RequestQueue.
import ArgumentParser
import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import Synchronization

/// The command line: no options; `--help` says what the demo shows, anything else is refused.
struct HTTPDemo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http-demo",
        abstract: "The requests scene against a Hummingbird server on 127.0.0.1.",
        discussion: """
            A RequestQueue over AsyncHTTPClient whose token expires mid-burst: one refresh, the \
            other requests parked and re-sent with the new token. Talks to nothing but 127.0.0.1.
            """)
}
_ = HTTPDemo.parseOrExit()

print("== RequestQueue over AsyncHTTPClient, against a Hummingbird server on 127.0.0.1 ==")
var behaviour = ServerBehaviour()
behaviour.refreshDelay = .milliseconds(150)
let server = try await LoopbackServer.start(behaviour: behaviour)
let log = DemoLog()
log.add("server listening on \(server.baseURL); the server expires token t0 at 130 ms")

try await HTTPClientTransport.withTransport { transport in
    let scheduler = SerialQueue(label: "demo.http")
    let tokenURL = server.url("/token")
    let policy = RequestQueue<HTTPClientTransport>.Policy(
        classify: HTTPClientTransport.classify,
        refresh: { expired, completion in
            log.add("refresh starts (token \(expired) rejected); every other request waits")
            transport.fetchToken(HTTPRequest(.POST, url: tokenURL)) { result in
                log.add("refresh done: \((try? result.get().value) ?? "failed")")
                completion(result)
            }
        })
    let queue = RequestQueue(
        transport: transport, credential: BearerToken("t0"), policy: policy,
        configuration: .init(maximumConcurrent: 4, agingInterval: .milliseconds(400)), scheduler: scheduler)

    let burst: [(String, RequestPriority)] = [
        ("feed", .default), ("profile", .high), ("avatar", .low), ("inbox", .high),
        ("ads", .low), ("friends", .default), ("settings", .default), ("badges", .low),
        ("news", .high), ("weather", .default), ("stocks", .low), ("calendar", .high),
    ]
    print("12 requests (4 high, 4 default, 4 low), at most 4 in flight, each answered after 60–120 ms.")
    let expiry = Task {
        try? await Task.sleep(for: .milliseconds(130))
        server.expireToken()
        log.add("server: token t0 expires")
    }
    let completed = Atomic<Int>(0)
    let (done, doneSink) = AsyncStream.makeStream(of: Void.self)
    for (index, (name, priority)) in burst.enumerated() {
        var request = HTTPRequest(url: server.url("/items/\(name)?delay_ms=\(60 + (index * 37) % 60)"))
        request.headers.add(name: "X-Tag", value: name)
        queue.submit(
            request, priority: priority, timeout: .seconds(5),
            onStateChange: { state in
                if state == .redirect { log.add("/items/\(name) parked (redirect): its token expired") }
            },
            completion: { result in
                switch result {
                case .success(let response): log.add("/items/\(name) done: \(response.status.code) \(response.bodyText)")
                case .cached(let response): log.add("/items/\(name) done from cache: \(response.status.code)")
                case .failure(let error): log.add("/items/\(name) failed: \(error)")
                }
                if completed.add(1, ordering: .acquiringAndReleasing).newValue == burst.count { doneSink.finish() }
            })
    }
    let finished = await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await _ in done {}
            return true
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(10))
            return false
        }
        let first = await group.next()!
        group.cancelAll()
        doneSink.finish()
        return first
    }
    expiry.cancel()
    let statistics = queue.statistics
    queue.shutdown()
    // Answers still in flight reach the queue through its scheduler: keep it running until
    // they have ended (withTransport shuts the client down only after this body).
    for _ in 0..<200 where transport.requestsInFlight > 0 { try await Task.sleep(for: .milliseconds(10)) }
    await scheduler.run {}  // completions of anything shutdown ended have run
    scheduler.shutdown()
    log.printAll()
    let counts = server.counts
    print("""
        \(burst.count) submitted, \(completed.load(ordering: .acquiring)) completed once each\
        \(finished ? "" : " (gave up waiting after 10 s)"); \
        \(statistics.sends) sends, \(statistics.refreshesStarted) refresh, \
        \(statistics.resentAfterRefresh) parked and re-sent after it, \
        \(statistics.resentWithoutRefresh) re-sent at once (the new token already existed).
        The server saw \(counts.arrivals(of: "items").count) requests (\(counts.rejected) answered 401), \
        \(counts.refreshCalls) refresh call, at most \(counts.maximumInFlight) requests at once.
        Arrival order: \(counts.arrivals(of: "items").map { "\($0.tag ?? "?")/\($0.token ?? "-")" }.joined(separator: " "))

        """)
}
await server.stop()

/// Lines stamped with the milliseconds since the demo started, printed at the end.
final class DemoLog: Sendable {
    private let start = ContinuousClock.now
    private let lines = Mutex<[String]>([])

    func add(_ line: String) {
        let elapsed = (ContinuousClock.now - self.start).components
        let milliseconds = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
        let stamp = String(milliseconds)
        self.lines.withLock { $0.append("t+\(String(repeating: " ", count: max(0, 4 - stamp.count)))\(stamp) ms  \(line)") }
    }

    func printAll() {
        for line in self.lines.withLock({ $0 }) { print(line) }
    }
}
