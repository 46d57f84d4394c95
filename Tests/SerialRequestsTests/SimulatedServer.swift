import SerialCore
import SerialRequests
import Synchronization

/// A request of the simulated API: a name, the statuses the server answers its successive sends
/// with (the last one repeats), and the server's latency for it.
///
/// Statuses: 200 ok, 304 "use your cache", 401 expired (also answered, whatever the script says,
/// when the credential is not the server's valid one), 503 retryable, 500 fatal,
/// -1 connection error (a transport error), 0 never answers.
struct Call: Sendable, Hashable {
    var name: String
    var statuses: [Int] = [200]
    var latency: Duration = .milliseconds(10)
    /// The credential the request was last rebuilt for (`Policy.rebuild` sets it).
    var signedWith: Int? = nil
}

/// What the simulated server answers.
struct Reply: Sendable, Hashable {
    var name: String
    var status: Int
    var token: Int
}

struct ConnectionLost: Error, Hashable {}
struct RefreshDenied: Error, Hashable {}
struct ServerSaidNo: Error, Hashable { var status: Int }

/// A server on a scheduler (virtual time in unit tests, real queues in stress tests) that answers
/// after each call's latency, checks the credential when it answers, and issues new credentials.
final class SimulatedServer: RequestTransport, Sendable {
    typealias Request = Call
    typealias Response = Reply
    typealias Credential = Int

    struct Send: Sendable, Hashable {
        var name: String
        var credential: Int
        var signedWith: Int?
        var at: MonotonicInstant
    }

    struct State: Sendable {
        var validToken = 0
        var issued = 0
        var sends: [Send] = []
        var attemptsByName: [String: Int] = [:]
        var inFlight = 0
        var maximumInFlight = 0
        var inFlightNames: [String: Int] = [:]
        var refreshCalls = 0
        var refreshStartedAt: [MonotonicInstant] = []
        /// Outcomes of successive refreshes: true = issue a new token, false = deny; the last repeats.
        var refreshScript: [Bool] = [true]
        /// nil: the refresh never answers.
        var refreshLatency: Duration? = .milliseconds(20)
        /// Answer every send twice (a buggy transport).
        var answerTwice = false
        /// Tokens accepted besides `validToken` (issued by "another process" in coordinator tests).
        var alsoValid: Set<Int> = []
        /// When set, tokens expire: each issued token lasts this long, and every token issued and
        /// not revoked stays valid until its expiry (like signed tokens), not only the newest.
        var tokenLifetime: Duration? = nil
        /// The expiry of each token, in lifetime mode (token 0's is set by the test).
        var expiries: [Int: MonotonicInstant] = [:]
        /// In lifetime mode, tokens below this are revoked (`expireToken`).
        var oldestValid = 0
        /// Answers with status 401 (the requests that met an expired credential).
        var rejected = 0
    }

    let scheduler: any Scheduling
    /// Where answers are delivered from (the scheduler itself, or other queues in stress tests).
    let answerOn: @Sendable (Duration, @escaping @Sendable () -> Void) -> Void
    let state = LockedValue(State())

    init(scheduler: any Scheduling) {
        self.scheduler = scheduler
        // A shut-down scheduler loses the answer, as a dead network would.
        self.answerOn = { delay, work in _ = try? scheduler.schedule(after: delay, work) }
    }

    init(scheduler: any Scheduling, answerOn: @escaping @Sendable (Duration, @escaping @Sendable () -> Void) -> Void) {
        self.scheduler = scheduler
        self.answerOn = answerOn
    }

    func send(_ request: Call, credential: Int, completion: @escaping @Sendable (Result<Reply, any Error>) -> Void) {
        let now = self.scheduler.now
        let (scripted, twice) = self.state.withLock { state in
            let attempt = state.attemptsByName[request.name, default: 0]
            state.attemptsByName[request.name] = attempt + 1
            state.sends.append(
                Send(name: request.name, credential: credential, signedWith: request.signedWith, at: now))
            state.inFlight += 1
            state.maximumInFlight = max(state.maximumInFlight, state.inFlight)
            state.inFlightNames[request.name, default: 0] += 1
            return (request.statuses[min(attempt, request.statuses.count - 1)], state.answerTwice)
        }
        guard scripted != 0 else { return }
        self.answerOn(request.latency) {
            let now = self.scheduler.now
            let status = self.state.withLock { state in
                state.inFlight -= 1
                state.inFlightNames[request.name, default: 1] -= 1
                let status = state.accepts(credential, at: now) ? scripted : 401
                if status == 401 { state.rejected += 1 }
                return status
            }
            let outcome: Result<Reply, any Error> =
                status == -1
                ? .failure(ConnectionLost())
                : .success(Reply(name: request.name, status: status, token: credential))
            completion(outcome)
            if twice { completion(outcome) }
        }
    }

    /// The refresh endpoint: after `refreshLatency`, a new valid token or a denial.
    func refresh(expired: Int, completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        let now = self.scheduler.now
        let (grant, latency) = self.state.withLock { state in
            state.refreshCalls += 1
            state.refreshStartedAt.append(now)
            let grant = state.refreshScript[min(state.refreshCalls - 1, state.refreshScript.count - 1)]
            return (grant, state.refreshLatency)
        }
        guard let latency else { return }
        self.answerOn(latency) {
            if grant {
                let now = self.scheduler.now
                let token = self.state.withLock { state in
                    state.issued += 1
                    state.validToken = state.issued
                    if let lifetime = state.tokenLifetime { state.expiries[state.issued] = now.advanced(by: lifetime) }
                    return state.issued
                }
                completion(.success(token))
            } else {
                completion(.failure(RefreshDenied()))
            }
        }
    }

    /// Invalidates the current token: answers from now on say 401 until a refresh issues a new one.
    func expireToken() {
        self.state.withLock { state in
            state.validToken = -1
            state.oldestValid = state.issued + 1
        }
    }

    /// When `token` expires (lifetime mode), as the policy reads it from the token.
    func expiry(of token: Int) -> MonotonicInstant? {
        self.state.withLock { $0.expiries[token] }
    }

    /// Tokens expire from now on: each lasts `lifetime.lifetime`, token 0 `firstExpiresIn` after `start`.
    func expireTokens(_ lifetime: TokenLifetime, from start: MonotonicInstant) {
        self.state.withLock { state in
            state.tokenLifetime = lifetime.lifetime
            state.expiries[0] = start.advanced(by: lifetime.firstExpiresIn)
        }
    }

    /// The policy's view of the tokens' lifetime: the expiry the server gave each.
    func knownLifetime(_ lifetime: TokenLifetime) -> RequestQueue<SimulatedServer>.CredentialLifetime {
        .init(
            refreshMargin: lifetime.margin, retryInterval: lifetime.retryInterval, retryJitter: lifetime.retryJitter
        ) { token in self.expiry(of: token) }
    }

    /// Requests answered 401.
    var rejected: Int { self.state.withLock { $0.rejected } }

    var sends: [Send] { self.state.withLock { $0.sends } }
    var sentNames: [String] { self.state.withLock { $0.sends.map(\.name) } }
    var refreshCalls: Int { self.state.withLock { $0.refreshCalls } }
    var inFlight: Int { self.state.withLock { $0.inFlight } }
    var maximumInFlight: Int { self.state.withLock { $0.maximumInFlight } }

    /// The queue policy for this server: statuses mapped to dispositions, `rebuild` signing with
    /// the credential, `refresh` hitting the refresh endpoint, the given cache.
    func policy(cache: ResponseCacheBox = ResponseCacheBox()) -> RequestQueue<SimulatedServer>.Policy {
        RequestQueue<SimulatedServer>.Policy(
            classify: { _, outcome in
                switch outcome {
                case .failure(let error): return .retry(error)
                case .success(let reply):
                    switch reply.status {
                    case 200: return .success
                    case 304: return .useCache
                    case 401: return .credentialExpired
                    case 503: return .retry(ServerSaidNo(status: 503))
                    default: return .failure(ServerSaidNo(status: reply.status))
                    }
                }
            },
            rebuild: { call, credential in
                cache.rebuilds.add(1, ordering: .relaxed)
                var rebuilt = call
                rebuilt.signedWith = credential
                return rebuilt
            },
            refresh: { expired, completion in self.refresh(expired: expired, completion: completion) },
            cachedResponse: { call in cache.entries.withLock { $0[call.name] } },
            storeResponse: { call, reply in cache.stored.withLock { $0.append(call.name) } }
        )
    }
}

extension SimulatedServer.State {
    /// Whether the server takes `credential` at `now`.
    func accepts(_ credential: Int, at now: MonotonicInstant) -> Bool {
        if self.alsoValid.contains(credential) { return true }
        guard self.tokenLifetime != nil else { return credential == self.validToken }
        guard credential >= self.oldestValid, credential <= self.issued else { return false }
        return self.expiries[credential].map { now < $0 } ?? true
    }
}

/// A cache the test fills, and counters of what the policy did.
final class ResponseCacheBox: Sendable {
    let entries = LockedValue<[String: Reply]>([:])
    let stored = LockedValue<[String]>([])
    let rebuilds = Atomic<Int>(0)
}
