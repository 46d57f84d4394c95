import SerialCore

/// The credential, its generation, and the single-flight refresh with its rate window: a pure
/// state (no threads, no clock of its own) that `RequestQueue.State` consults under its lock.
///
/// **Single flight.** A refresh is tied to the generation it replaces. An expiry reported for a
/// request sent with the current generation starts a refresh only when none is waiting or running;
/// every other such expiry parks behind it. An expiry reported for a request sent with an *older*
/// generation needs no refresh at all: the credential has already been replaced, so the request is
/// sent again at once. After a refresh fails, the generation is unchanged and a later expiry may
/// start another refresh, subject to the window.
///
/// **Generations.** The credential given at the start has the generation given with it (0 by
/// default); each new credential carries the generation its coordinator published it with (one
/// more than the one it replaced, or more when another holder published meanwhile).
///
/// **Window.** At most `limit` refreshes may start within any `window`; the one after that is
/// refused (`.limitExceeded`), which turns a server that rejects every new credential into an
/// error instead of a loop.
///
/// - Invariant: `phase` is `.idle` exactly when no refresh is waiting for a slot or running;
///   `history` holds start instants in increasing order, at most `limit` of them.
package struct CredentialRefresh<Credential> {
    /// Where the refresh stands; `token` tells its answer from a stale one.
    package enum Phase: Equatable {
        case idle
        /// Raised the unique gate; waits for a free slot.
        case waiting(token: UInt64)
        /// Handed to `Policy.refresh`; waiting for its answer.
        case running(token: UInt64)
    }

    /// What to do with a request whose credential expired.
    package enum ExpiryDecision: Equatable {
        /// It was sent with an older generation: send it again now with the current credential.
        case resend
        /// A refresh for the current generation is already waiting or running: park behind it.
        case park
        /// Park it; a refresh with this token was just raised.
        case parkAndRefresh(token: UInt64)
        /// A refresh is needed but the window is full: fail the request.
        case limitExceeded
    }

    package private(set) var credential: Credential
    package private(set) var generation: UInt64 = 0
    package private(set) var phase: Phase = .idle
    private var history: [MonotonicInstant] = []
    package let limit: Int
    package let window: Duration

    package init(credential: Credential, generation: UInt64 = 0, limit: Int, window: Duration) {
        self.credential = credential
        self.generation = generation
        self.limit = limit
        self.window = window
    }

    /// Whether a refresh is waiting or running (the unique gate is raised for it).
    package var isActive: Bool { self.phase != .idle }

    /// Decides for a request sent with `sentGeneration` that met an expired credential at `now`;
    /// `token` names the refresh if one must start.
    package mutating func credentialExpired(
        sentGeneration: UInt64, now: MonotonicInstant, token: UInt64
    ) -> ExpiryDecision {
        if sentGeneration < self.generation { return .resend }
        if self.phase != .idle { return .park }
        let windowStart = now.advanced(by: .zero - self.window)
        self.history.removeAll { $0 <= windowStart }
        if self.history.count >= self.limit { return .limitExceeded }
        self.history.append(now)
        self.phase = .waiting(token: token)
        return .parkAndRefresh(token: token)
    }

    /// Moves a waiting refresh to running; returns the credential to refresh and its generation.
    package mutating func start() -> (token: UInt64, expired: Credential, generation: UInt64)? {
        guard case .waiting(let token) = self.phase else { return nil }
        self.phase = .running(token: token)
        return (token, self.credential, self.generation)
    }

    /// Whether `token` is the running refresh's.
    package func isRunning(_ token: UInt64) -> Bool {
        self.phase == .running(token: token)
    }

    /// Installs `credential` as generation `generation` (default: the next one), if `token` is the
    /// running refresh's. A generation not newer than the current one installs nothing new.
    package mutating func succeeded(token: UInt64, credential: Credential, generation: UInt64? = nil) -> Bool {
        guard self.isRunning(token) else { return false }
        let next = generation ?? self.generation + 1
        if next > self.generation {
            self.credential = credential
            self.generation = next
        }
        self.phase = .idle
        return true
    }

    /// Ends the running refresh without a new credential, if `token` is its.
    package mutating func failed(token: UInt64) -> Bool {
        guard self.isRunning(token) else { return false }
        self.phase = .idle
        return true
    }

    /// Forgets any refresh (shutdown); its answer will be ignored.
    package mutating func abandon() {
        self.phase = .idle
    }
}
