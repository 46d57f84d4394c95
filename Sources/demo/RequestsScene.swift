import Glibc
import SerialRuntime
import Synchronization

/// A burst of requests against a server whose token expires mid-burst — one refresh,
/// the parked requests sent again with the new token, every request completed once. Then the
/// overnight start: a token known to have expired is refreshed before the first request.
enum RequestsScene {
    static func run() {
        self.runExpiryMidBurst()
        self.runOvernightStart()
    }

    static func runExpiryMidBurst() {
        print("== RequestQueue: a token expires in the middle of a burst ==")
        let scheduler = SerialQueue(label: "demo.requests")
        let log = SceneLog()
        let server = DemoServer(log: log)
        let policy = RequestQueue<DemoServer>.Policy(
            classify: Self.classify,
            rebuild: { path, _ in path },
            refresh: { expired, completion in
                log.add("refresh starts (token \(expired) rejected); every other request waits")
                server.issueToken(completion)
            })
        let queue = RequestQueue(
            transport: server, credential: 1, policy: policy,
            configuration: .init(maximumConcurrent: 4, agingInterval: .milliseconds(400)), scheduler: scheduler)

        let burst: [(String, RequestPriority)] = [
            ("/feed", .default), ("/profile", .high), ("/avatar", .low), ("/inbox", .high),
            ("/ads", .low), ("/friends", .default), ("/settings", .default), ("/badges", .low),
            ("/news", .high), ("/weather", .default), ("/stocks", .low), ("/calendar", .high),
        ]
        print("""
            12 requests (4 high, 4 default, 4 low), at most 4 in flight: the first four take the free \
            slots, then the most urgent waiting one goes next. The server's token 1 expires at 220 ms.
            """)
        let completed = CompletionCount()
        server.expireToken(after: .milliseconds(220))
        for (path, priority) in burst {
            queue.submit(
                path, priority: priority,
                onStateChange: { state in
                    if state == .redirect { log.add("\(path) → state .redirect: its token expired; parked until the refresh ends") }
                },
                completion: self.logCompletion(path, log, counting: completed))
        }
        self.finish(queue, server, scheduler, log, waitingFor: burst.count, completed)
        let statistics = queue.statistics
        print("""
            \(burst.count) submitted, \(completed.value) completed once each; \
            \(statistics.sends) sends, \(statistics.refreshesStarted) refresh, \
            \(statistics.resentAfterRefresh) parked and re-sent after it, \
            \(statistics.resentWithoutRefresh) re-sent at once (the new token already existed).

            """)
    }

    /// 401 means the token expired; transport errors are retried.
    private static let classify: @Sendable (String, Result<DemoServer.Reply, any Error>) -> ResponseDisposition = { _, outcome in
        switch outcome {
        case .success(let reply) where reply.status == 401: return .credentialExpired
        case .success: return .success
        case .failure(let error): return .retry(error)
        }
    }

    /// Logs how the request for `path` ended and counts it.
    private static func logCompletion(
        _ path: String, _ log: SceneLog, counting completed: CompletionCount
    ) -> @Sendable (RequestResult<DemoServer.Reply>) -> Void {
        { result in
            switch result {
            case .success(let reply): log.add("\(path) done: \(reply.status) with token \(reply.token)")
            case .cached(let reply): log.add("\(path) done from cache: \(reply.status)")
            case .failure(let error): log.add("\(path) failed: \(error)")
            }
            completed.add()
        }
    }

    /// Waits (at most 5 s) for `count` completions, then stops everything and prints the log.
    private static func finish(
        _ queue: RequestQueue<DemoServer>, _ server: DemoServer, _ scheduler: SerialQueue, _ log: SceneLog,
        waitingFor count: Int, _ completed: CompletionCount
    ) {
        let deadline = MonotonicInstant.now() + .seconds(5)
        while completed.value < count && MonotonicInstant.now() < deadline {
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
        queue.shutdown()
        server.stop()
        scheduler.sync {}  // the completions of anything shutdown ended have run
        scheduler.shutdown()
        log.printAll()
    }

    /// The app starts in the morning with the token it kept overnight; the token says it expired
    /// at 2 a.m. With its lifetime in the policy, the queue refreshes before sending anything.
    static func runOvernightStart() {
        print("== RequestQueue: the app starts with a token that expired overnight ==")
        let scheduler = SerialQueue(label: "demo.overnight")
        let log = SceneLog()
        let server = DemoServer(log: log, validToken: -1)
        let startedAt = scheduler.now
        let policy = RequestQueue<DemoServer>.Policy(
            classify: Self.classify,
            refresh: { expired, completion in
                log.add("refresh starts before any request is sent (token \(expired) expired overnight)")
                server.issueToken(completion)
            },
            lifetime: .init(refreshMargin: .seconds(60)) { token in
                // Token 1 expired 6 hours before the app started; a new token lasts an hour.
                token == 1 ? startedAt - .seconds(6 * 3600) : startedAt + .seconds(3600)
            })
        let queue = RequestQueue(transport: server, credential: 1, policy: policy, scheduler: scheduler)
        print("The queue is created with token 1, which is \(queue.credentialFreshness); four requests are submitted at once.")
        let paths = ["/session", "/feed", "/inbox", "/settings"]
        let completed = CompletionCount()
        for path in paths { queue.submit(path, completion: self.logCompletion(path, log, counting: completed)) }
        self.finish(queue, server, scheduler, log, waitingFor: paths.count, completed)
        let statistics = queue.statistics
        print("""
            \(paths.count) submitted, \(completed.value) completed once each; \
            \(statistics.expiries) rejected with 401, \(statistics.refreshesStarted) refresh before the first send, \
            \(statistics.sends) sends.

            """)
    }
}

/// Completions counted across threads.
private final class CompletionCount: Sendable {
    private let count = Atomic<Int>(0)
    func add() { self.count.add(1, ordering: .releasing) }
    var value: Int { self.count.load(ordering: .acquiring) }
}

/// Lines stamped with the milliseconds since the scene started, printed at the end.
private final class SceneLog: Sendable {
    private let start = MonotonicInstant.now()
    private let lines = Mutex<[String]>([])

    func add(_ line: String) {
        let elapsed = self.start.duration(to: .now()).saturatingNanoseconds / 1_000_000
        self.lines.withLock { $0.append("t+\(String(elapsed).leftPadded(to: 4)) ms  \(line)") }
    }

    func printAll() {
        for line in self.lines.withLock({ $0 }) { print(line) }
    }
}

/// A server on its own SerialQueue: answers after 60–120 ms, 401 unless the token is current.
private final class DemoServer: RequestTransport, Sendable {
    typealias Request = String
    typealias Response = Reply
    typealias Credential = Int

    struct Reply: Sendable {
        var status: Int
        var token: Int
    }

    private let queue = SerialQueue(label: "demo.server")
    private let validToken: Atomic<Int>
    private let sends = Atomic<Int>(0)
    private let log: SceneLog

    /// A server that takes `validToken` (-1: none yet) until a refresh issues token 2.
    init(log: SceneLog, validToken: Int = 1) {
        self.log = log
        self.validToken = Atomic(validToken)
    }

    func send(_ path: String, credential: Int, completion: @escaping @Sendable (Result<Reply, any Error>) -> Void) {
        let count = self.sends.add(1, ordering: .relaxed).newValue
        self.log.add("\(path) sent with token \(credential)")
        self.queue.asyncAfter(delay: .milliseconds(60 + (count * 37) % 60)) {
            let valid = credential == self.validToken.load(ordering: .acquiring)
            completion(.success(Reply(status: valid ? 200 : 401, token: credential)))
        }
    }

    func issueToken(_ completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        self.queue.asyncAfter(delay: .milliseconds(150)) {
            let token = 2
            self.validToken.store(token, ordering: .releasing)
            self.log.add("refresh done: token \(token) issued")
            completion(.success(token))
        }
    }

    func expireToken(after delay: Duration) {
        self.queue.asyncAfter(delay: delay) {
            self.validToken.store(-1, ordering: .releasing)
            self.log.add("server: token 1 expires")
        }
    }

    func stop() {
        self.queue.shutdown()
    }
}
