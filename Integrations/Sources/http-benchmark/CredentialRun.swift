import AsyncHTTPClient
import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import Synchronization

/// The benchmark's run with expiring tokens (`--token-lifetime`): one `RequestQueue` for every
/// queue run, as one app would keep, refreshing through `POST /token`. The policy is told each
/// token's expiry unless `--hide-lifetime` (then it learns of an expiry from a 401, as before).
/// The other ways send `passToken`, which the server always accepts.
final class CredentialRun: Sendable {
    static let passToken = "pass"

    let scheduler = SerialQueue(label: "bench-credentials")
    let lifetime: Duration
    let known: Bool
    /// Each token's expiry as the client reckons it: from before it asked for the token, so
    /// never later than the server's.
    private let expiries = Mutex<[String: MonotonicInstant]>([:])
    /// From the start of the first queue run to the end of the last.
    private let window = Mutex<(first: ContinuousClock.Instant?, last: ContinuousClock.Instant?)>((nil, nil))
    private let queue = Mutex<RequestQueue<HTTPClientTransport>?>(nil)

    /// Call before the server starts: the first token's expiry is reckoned from now.
    init(lifetime: Duration, known: Bool) {
        self.lifetime = lifetime
        self.known = known
        self.expiries.withLock { $0["t0"] = self.scheduler.now + lifetime }
    }

    /// The queue, made at the first call, with the first token.
    func queue(client: HTTPClient, tokenURL: String, concurrency: Int) -> RequestQueue<HTTPClientTransport> {
        self.queue.withLock { queue in
            if let queue { return queue }
            let transport = HTTPClientTransport(client: client)
            let lifetime = RequestQueue<HTTPClientTransport>.CredentialLifetime(
                refreshMargin: self.lifetime / 5, retryInterval: .milliseconds(200)
            ) { token in self.expiries.withLock { $0[token.value] } }
            let policy = RequestQueue<HTTPClientTransport>.Policy(
                classify: HTTPClientTransport.classify,
                refresh: { _, completion in self.fetchToken(transport, url: tokenURL, completion: completion) },
                lifetime: self.known ? lifetime : nil)
            let made = RequestQueue(
                transport: transport, credential: "t0", policy: policy,
                // Known, each token pays for its own refresh: the default limit (3 a minute) holds. Hidden,
                // every refresh follows rejections, which the limit counts: a token every few seconds
                // would be refused.
                configuration: .init(
                    maximumConcurrent: concurrency, refreshLimit: self.known ? 3 : 1_000, refreshWindow: .seconds(60),
                    agingInterval: nil),
                scheduler: self.scheduler)
            queue = made
            return made
        }
    }

    /// `POST /token`: `<token> <milliseconds it lasts>`.
    private func fetchToken(
        _ transport: HTTPClientTransport, url: String, completion: @escaping @Sendable (Result<BearerToken, any Error>) -> Void
    ) {
        let askedAt = self.scheduler.now
        transport.send(HTTPRequest(.POST, url: url), bearer: nil) { outcome in
            completion(outcome.flatMap { response in
                let parts = response.bodyText.split(separator: " ")
                guard response.status == .ok, parts.count == 2, let milliseconds = Int64(parts[1]) else {
                    return .failure(BenchmarkTokenError(answer: response.bodyText))
                }
                let token = String(parts[0])
                self.expiries.withLock { $0[token] = askedAt + .milliseconds(milliseconds) }
                return .success(BearerToken(token))
            })
        }
    }

    /// Marks a queue run's start and end, for counting the expiries within them.
    func ran(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) {
        self.window.withLock { window in
            window.first = window.first ?? start
            window.last = end
        }
    }

    /// The contract line: `credentials: E expiries, R refreshes, J requests rejected`, where E
    /// counts the tokens whose lifetime ran out between the first queue run's start and the
    /// last one's end, R the server's `POST /token` calls and J its 401 answers.
    func contractLine(server: LoopbackServer) -> String {
        let (first, last) = self.window.withLock { ($0.first, $0.last) }
        let expiries = first.flatMap { first in last.map { server.tokenExpiries(within: first...$0) } } ?? 0
        let counts = server.counts
        return "credentials: \(expiries) expiries, \(counts.refreshCalls) refreshes, \(counts.rejected) requests rejected"
    }

    /// The queue's own counts, for the log.
    var queueLine: String {
        guard let statistics = self.queue.withLock({ $0?.statistics }) else { return "no queue run" }
        return "queue: lifetime \(self.known ? "known" : "hidden"), \(statistics.refreshesStarted) refreshes started "
            + "(\(statistics.refreshesAhead) ahead of expiry, \(statistics.heldForExpiry) requests held for one), "
            + "\(statistics.expiries) expired answers"
    }

    /// Ends the queue (every request has ended by then).
    func shutDown() async {
        self.queue.withLock { $0 }?.shutdown()
        await self.scheduler.run {}
        self.scheduler.shutdown()
    }
}

struct BenchmarkTokenError: Error, CustomStringConvertible {
    var answer: String
    var description: String { "POST /token answered \"\(self.answer)\", not \"<token> <milliseconds>\"" }
}
