// Requests per second through RequestQueue + AsyncHTTPClient against AsyncHTTPClient alone:
// the same loopback server, the same client, the same number of requests in flight.
//
//   swift run -c release http-benchmark [--requests N] [--concurrency C] [--runs R]
//
// Prints each run, then the median of each way and the ratios, and ends with one line other
// tools read: `pipeline/client: <percent> %` (RequestQueue + AsyncHTTPClient as a percentage of
// AsyncHTTPClient alone, medians). Runs alternate between the ways so that drift on a shared
// machine hits them alike.
//
// With `--token-lifetime SECONDS`, the server's tokens expire that long after they are issued and
// the queue refreshes them through `POST /token` (one queue for all its runs, as one app); its
// policy knows each token's expiry (refresh margin: a fifth of the lifetime) unless
// `--hide-lifetime`. The run then ends with another contract line:
// `credentials: E expiries, R refreshes, J requests rejected` (see `CredentialRun`).
import ArgumentParser
import AsyncHTTPClient
import LoopbackServer
import NIOCore
import NIOHTTP1
import SerialHTTPClient
import SerialRuntime
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

let arguments = BenchmarkArguments.parseOrExit()
let credentials = arguments.tokenLifetime.map {
    CredentialRun(lifetime: .milliseconds(Int64($0 * 1000)), known: !arguments.hideLifetime)
}
var behaviour = ServerBehaviour()
if let credentials {
    behaviour.tokenLifetime = credentials.lifetime
    behaviour.benchPassToken = CredentialRun.passToken
}
let server = try await LoopbackServer.start(behaviour: behaviour)
var clientConfiguration = HTTPClient.Configuration()
clientConfiguration.connectionPool = .init(
    idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: arguments.concurrency)
let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: clientConfiguration)
let url = server.url("/bench")
print("""
    http-benchmark: \(arguments.requests) GET \(url) per run, \(arguments.concurrency) in flight, \
    \(arguments.runs) runs of each way (alternating), after a warm-up\
    \(credentials.map { ", tokens expiring every \($0.lifetime) (lifetime \($0.known ? "known" : "hidden"))" } ?? "")
    """)

let ways: [Way] = [.client, .transport, .queue]
var rates: [Way: [Double]] = [:]
for way in ways {
    _ = try await way.measure(
        client: client, url: url, requests: arguments.requests / 5, concurrency: arguments.concurrency,
        credentials: credentials, tokenURL: server.url("/token"))
}
for run in 1...arguments.runs {
    for way in ways {
        let rate = try await way.measure(
            client: client, url: url, requests: arguments.requests, concurrency: arguments.concurrency,
            credentials: credentials, tokenURL: server.url("/token"))
        rates[way, default: []].append(rate)
        print("run \(run) \(way.name.padding(30)) \(Int(rate)) requests/s")
    }
}
let medians = Dictionary(uniqueKeysWithValues: ways.map { ($0, median(rates[$0]!)) })
print("")
for way in ways {
    let ratio = medians[way]! / medians[.client]!
    print("median \(way.name.padding(30)) \(Int(medians[way]!)) requests/s  (\(percent(ratio)) of AsyncHTTPClient alone)")
}
let cost = 1 - medians[.queue]! / medians[.client]!
print("RequestQueue costs \(percent(cost)) of AsyncHTTPClient's throughput")
await credentials?.shutDown()
try await shutDown(client)
await server.stop()
let pipelineShare = (medians[.queue]! / medians[.client]! * 1000).rounded() / 10
print("pipeline/client: \(pipelineShare) %")
if let credentials {
    print(credentials.queueLine)
    print(credentials.contractLine(server: server))
}

/// One way of sending the same requests.
enum Way: Hashable {
    /// AsyncHTTPClient alone: `concurrency` chains, each sending its next request from the
    /// completion of the previous one.
    case client
    /// `HTTPClientTransport.send` without a queue, chained the same way.
    case transport
    /// `RequestQueue` (`maximumConcurrent` = concurrency) over `HTTPClientTransport`; twice as
    /// many requests submitted as may run, the next one submitted from each completion.
    case queue

    var name: String {
        switch self {
        case .client: "AsyncHTTPClient alone"
        case .transport: "HTTPClientTransport alone"
        case .queue: "RequestQueue + AsyncHTTPClient"
        }
    }

    /// Sends `requests` requests; returns requests per second. Throws on any failed request.
    func measure(
        client: HTTPClient, url: String, requests: Int, concurrency: Int, credentials: CredentialRun?, tokenURL: String
    ) async throws -> Double {
        let token = credentials == nil ? "t0" : CredentialRun.passToken
        let finish = FinishLine(total: requests)
        var teardown: (@Sendable () async -> Void)? = nil
        let send: Chain.Send
        var chains = concurrency
        switch self {
        case .client:
            // Built per request, as a caller of AsyncHTTPClient does (URL parsing included).
            send = { done in
                var headers = HTTPHeaders()
                headers.add(name: "Authorization", value: "Bearer \(token)")
                guard let request = try? HTTPClient.Request(url: url, method: .GET, headers: headers) else {
                    return done(false)
                }
                client.execute(request: request).whenComplete { done((try? $0.get().status) == .ok) }
            }
        case .transport:
            let transport = HTTPClientTransport(client: client)
            send = { done in
                transport.send(HTTPRequest(url: url), credential: BearerToken(token)) { done((try? $0.get().status) == .ok) }
            }
        case .queue where credentials != nil:
            // One queue for every run, as one app keeps its token.
            let queue = credentials!.queue(client: client, tokenURL: tokenURL, concurrency: concurrency)
            send = { done in queue.submit(HTTPRequest(url: url)) { done($0.error == nil) } }
            chains = 2 * concurrency
        case .queue:
            let scheduler = SerialQueue(label: "bench")
            let queue = RequestQueue(
                transport: HTTPClientTransport(client: client), credential: BearerToken("t0"),
                policy: .init(classify: HTTPClientTransport.classify, refresh: { _, done in done(.success("t0")) }),
                configuration: .init(maximumConcurrent: concurrency, agingInterval: nil), scheduler: scheduler)
            send = { done in queue.submit(HTTPRequest(url: url)) { done($0.error == nil) } }
            chains = 2 * concurrency  // some always wait in the queue, so a slot never idles
            teardown = {
                queue.shutdown()  // every request has ended: none is in flight to answer later
                await scheduler.run {}
                scheduler.shutdown()
            }
        }
        let start = ContinuousClock.now
        for _ in 0..<chains { Chain(finish: finish, send: send).next() }
        await finish.wait()
        let elapsed = ContinuousClock.now - start
        if self == .queue { credentials?.ran(from: start, to: .now) }
        await teardown?()
        guard finish.failures == 0 else { throw BenchmarkFailure(failures: finish.failures) }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(requests) / seconds
    }
}

/// Sends one request after another, each from the completion of the previous one, while the
/// finish line hands out slots.
final class Chain: Sendable {
    typealias Send = @Sendable (_ done: @escaping @Sendable (_ ok: Bool) -> Void) -> Void
    let finish: FinishLine
    let send: Send

    init(finish: FinishLine, send: @escaping Send) {
        self.finish = finish
        self.send = send
    }

    func next() {
        guard self.finish.claim() else { return }
        self.send { ok in
            self.finish.record(ok: ok)
            self.next()
        }
    }
}

/// Hands out `total` request slots and resumes `wait` once all of them completed.
final class FinishLine: Sendable {
    private let total: Int
    private let claimed = Atomic<Int>(0)
    private let completed = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)
    private let stream: AsyncStream<Void>
    private let sink: AsyncStream<Void>.Continuation

    init(total: Int) {
        self.total = total
        (self.stream, self.sink) = AsyncStream.makeStream(of: Void.self)
    }

    /// `true` while requests remain to be sent.
    func claim() -> Bool {
        self.claimed.add(1, ordering: .relaxed).newValue <= self.total
    }

    func record(ok: Bool) {
        if !ok { self.failed.add(1, ordering: .relaxed) }
        if self.completed.add(1, ordering: .acquiringAndReleasing).newValue == self.total { self.sink.finish() }
    }

    var failures: Int { self.failed.load(ordering: .relaxed) }

    func wait() async {
        for await _ in self.stream {}
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var failures: Int
    var description: String { "\(self.failures) requests failed; the figures would be meaningless" }
}

/// The command line: `--help` is generated; every value is checked before the server starts.
struct BenchmarkArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http-benchmark",
        abstract: "Requests per second through RequestQueue + AsyncHTTPClient against AsyncHTTPClient alone.",
        discussion: """
            Ends with one line: pipeline/client: <percent> % (RequestQueue + AsyncHTTPClient as a \
            percentage of AsyncHTTPClient alone, medians). With --token-lifetime it ends with \
            credentials: E expiries, R refreshes, J requests rejected (tokens whose lifetime ran out \
            during the queue's runs, POST /token calls, requests answered 401).
            """)

    @Option(help: "Requests per run of each way.")
    var requests = 20_000

    @Option(help: "Requests in flight.")
    var concurrency = 16

    @Option(help: "Runs of each way, alternating; medians are reported.")
    var runs = 5

    @Option(help: ArgumentHelp(
        "Tokens expire this many seconds after they are issued; the queue refreshes them.", valueName: "seconds"))
    var tokenLifetime: Double?

    @Flag(help: "With --token-lifetime: the queue's policy is not told when tokens expire (it learns from 401s).")
    var hideLifetime = false

    func validate() throws {
        for (flag, value) in [("--requests", self.requests), ("--concurrency", self.concurrency), ("--runs", self.runs)]
        where value < 1 {
            throw ValidationError("\(flag) needs a whole number of at least 1, got \(value)")
        }
        if let lifetime = self.tokenLifetime, !(lifetime >= 0.05 && lifetime <= 86_400) {
            throw ValidationError("--token-lifetime needs a number of seconds from 0.05 to 86400, got \(lifetime)")
        }
        if self.hideLifetime && self.tokenLifetime == nil {
            throw ValidationError("--hide-lifetime needs --token-lifetime")
        }
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func percent(_ ratio: Double) -> String {
    "\(Int((ratio * 1000).rounded()) / 10).\(abs(Int((ratio * 1000).rounded())) % 10)%"
}

extension String {
    func padding(_ width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - self.count))
    }
}

/// The async shutdown (top-level code would pick the future-returning overload).
func shutDown(_ client: HTTPClient) async throws {
    try await client.shutdown()
}

