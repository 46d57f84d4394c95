import Glibc
import SerialTesting
import Synchronization

/// The server's state, shared by its handlers (which capture it) and its owner.
final class SharedServerState: Sendable {
    private let mutex: Mutex<ServerState>

    init(_ state: ServerState) {
        self.mutex = Mutex(state)
    }

    func withLock<T>(_ body: (inout ServerState) -> T) -> T {
        self.mutex.withLock { body(&$0) }
    }

    /// Waits `duration`, or until the server stops (then throws `CancellationError`): a graceful
    /// stop waits for the handlers in flight, so the long waits of slow and hanging answers end.
    func sleep(for duration: Duration) async throws {
        let start = ContinuousClock.now
        while start.duration(to: .now) < duration {
            if self.withLock({ $0.stopping }) { throw CancellationError() }
            try await Task.sleep(for: min(.milliseconds(5), duration - start.duration(to: .now)))
        }
    }
}

/// Everything a `LoopbackServer`'s handlers share, under its mutex.
struct ServerState: Sendable {
    var behaviour: ServerBehaviour
    var counts = ServerCounts()
    /// The token accepted now, when it was issued, and how many requests it has served.
    var token: String
    var tokenIssuedAt = ContinuousClock.now
    var tokenUses = 0
    var tokenExpired = false
    /// With `behaviour.tokenLifetime`: when each token issued was issued.
    var issuedAt: [String: ContinuousClock.Instant] = [:]
    var uniquesInFlight = 0
    /// `stop()` began: long waits in handlers end.
    var stopping = false
    var random: SeededRandom
    var rotating = RotatingTokens()

    init(behaviour: ServerBehaviour, token: String, seed: UInt64) {
        self.behaviour = behaviour
        self.token = token
        self.random = SeededRandom(seed: seed)
        self.issuedAt[token] = self.tokenIssuedAt
    }

    /// With `behaviour.tokenLifetime`: whether `bearer` was issued and has not expired.
    func acceptAged(_ bearer: String?, lifetime: Duration) -> Bool {
        guard let bearer, !self.behaviour.rejectEveryToken, let issued = self.issuedAt[bearer] else { return false }
        return issued.duration(to: .now) < lifetime
    }

    /// Tokens whose lifetime ran out within `window` (with `behaviour.tokenLifetime`).
    func expiries(within window: ClosedRange<ContinuousClock.Instant>) -> Int {
        guard let lifetime = self.behaviour.tokenLifetime else { return 0 }
        return self.issuedAt.values.count { window.contains($0 + lifetime) }
    }

    /// Whether `bearer` is accepted now; counts the use when it is.
    mutating func accept(_ bearer: String?) -> Bool {
        let behaviour = self.behaviour
        if let lifetime = behaviour.tokenLifetime { return self.acceptAged(bearer, lifetime: lifetime) }
        guard !behaviour.rejectEveryToken, !self.tokenExpired, let bearer, bearer == self.token else { return false }
        if let limit = behaviour.tokenRequestLimit, self.tokenUses >= limit { return false }
        if let lifetime = behaviour.firstTokenLifetime, self.counts.tokensIssued == 0,
            self.tokenIssuedAt.duration(to: .now) >= lifetime
        {
            return false
        }
        self.tokenUses += 1
        return true
    }

    /// Issues the next token.
    mutating func issueToken() -> String {
        self.counts.tokensIssued += 1
        self.token = "t\(self.counts.tokensIssued)"
        self.tokenIssuedAt = .now
        self.tokenUses = 0
        self.tokenExpired = false
        guard let lifetime = self.behaviour.tokenLifetime else { return self.token }
        self.issuedAt[self.token] = self.tokenIssuedAt
        return "\(self.token) \(lifetime.components.seconds * 1000 + lifetime.components.attoseconds / 1_000_000_000_000_000)"
    }

    /// A request entered a handler.
    mutating func enter(unique: Bool) {
        self.counts.received += 1
        if self.uniquesInFlight > 0 { self.counts.arrivedDuringUnique += 1 }
        if unique {
            self.counts.othersInFlightWhenUniqueArrived.append(self.counts.inFlight)
            self.uniquesInFlight += 1
        }
        self.counts.inFlight += 1
        self.counts.maximumInFlight = max(self.counts.maximumInFlight, self.counts.inFlight)
    }

    /// A request left its handler.
    mutating func leave(unique: Bool) {
        self.counts.inFlight -= 1
        if unique { self.uniquesInFlight -= 1 }
    }

    /// The fault for the next `GET /fault/:id`.
    mutating func drawFault() -> Fault {
        let (serverError, slow, drop) = self.behaviour.faultPercentages
        let roll = Int(self.random.next() % 100)
        if roll < serverError { return .serverError }
        if roll < serverError + slow { return .slow(self.behaviour.slowDelay) }
        if roll < serverError + slow + drop { return .drop }
        return .none
    }

    /// The rotating family: generation `g` is access token `a<g>` and refresh token `r<g>`.
    struct RotatingTokens: Sendable {
        var generation = 0
        var accessUses = 0
        var used: Set<String> = []
        /// With `accessTokenLifetime`: when each generation's access token was issued.
        var issuedAt: [Int: ContinuousClock.Instant] = [0: .now]

        var access: String { "a\(self.generation)" }
        var refresh: String { "r\(self.generation)" }
    }

    /// Whether `bearer` may call `GET /api/:id` now; counts the use when it may.
    mutating func acceptRotating(_ bearer: String?) -> Bool {
        guard !self.counts.rotation.revoked else { return false }
        if let lifetime = self.behaviour.accessTokenLifetime {
            guard let bearer, bearer.first == "a", let generation = Int(bearer.dropFirst()),
                let issued = self.rotating.issuedAt[generation]
            else { return false }
            return issued.duration(to: .now) < lifetime
        }
        guard bearer == self.rotating.access else { return false }
        let plan = self.behaviour.accessTokenUses
        if self.rotating.generation < plan.count, self.rotating.accessUses >= plan[self.rotating.generation] {
            return false
        }
        self.rotating.accessUses += 1
        return true
    }

    /// A refresh with `token`: the next tokens, or `nil` (refused). A token already used revokes
    /// the family (reuse detection, as the OAuth 2.0 security best current practice asks).
    mutating func rotate(_ token: String?) -> (access: String, refresh: String)? {
        guard let tokens = self.rotateTokens(token) else { return nil }
        guard let lifetime = self.behaviour.accessTokenLifetime else { return tokens }
        self.rotating.issuedAt[self.rotating.generation] = self.rotating.issuedAt[self.rotating.generation] ?? .now
        let expiry = unixMilliseconds() + lifetime.components.seconds * 1000
            + lifetime.components.attoseconds / 1_000_000_000_000_000
        return (tokens.access, "\(tokens.refresh) \(expiry)")
    }

    private mutating func rotateTokens(_ token: String?) -> (access: String, refresh: String)? {
        guard let token else { return nil }
        if self.behaviour.reuseGrace, token == "r\(self.rotating.generation - 1)" {
            self.counts.rotation.graceAnswers += 1
            return (self.rotating.access, self.rotating.refresh)
        }
        if self.rotating.used.contains(token) {
            self.counts.rotation.reuseDetections += 1
            self.counts.rotation.revoked = true
            return nil
        }
        guard !self.counts.rotation.revoked, token == self.rotating.refresh else { return nil }
        self.rotating.used.insert(token)
        self.rotating.generation += 1
        self.rotating.accessUses = 0
        self.counts.rotation.refreshes += 1
        self.counts.rotation.refreshedAt.append(.now)
        return (self.rotating.access, self.rotating.refresh)
    }

    /// The wall clock, in milliseconds since 1970.
    private func unixMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    enum Fault {
        case none, serverError, slow(Duration), drop
    }
}
