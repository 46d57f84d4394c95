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
/// **Window.** At most `limit` counted refreshes may start within any `window`; the one after
/// that is refused (`.limitExceeded`), which turns a server that rejects every new credential into
/// an error instead of a loop. Not counted: the first refresh, ahead of or at its expiry, of a
/// credential that was fresh for at least `backgroundInterval` after it was installed
/// (`lifetimePaysNextRefresh`): its lifetime paced it, so such refreshes come at most one per
/// `backgroundInterval`. Counted: refreshes raised by a rejection, for a credential never fresh
/// that long, and further attempts for the same credential (retries after a failure).
///
/// **Lifetime.** When the expiry of the credential is known (`expiresAt`), it is fresh, stale
/// (within `margin` of it) or expired (see `CredentialFreshness`). A stale credential gets one
/// background refresh, which holds no request back (`holdsRequests` false) and, when it fails,
/// leaves the credential in place and is tried again no earlier than `backgroundNotBefore`. A
/// refresh raised by a rejected request, or for an expired credential, holds requests back until
/// it ends; a rejection met while a background refresh runs turns it into such a refresh rather
/// than starting another (one refresh per generation).
///
/// - Invariant: `phase` is `.idle` exactly when no refresh is raised or running, and then
///   `holdsRequests` is false; `history` holds start instants in increasing order, at most
///   `limit` of them.
package struct CredentialRefresh<Credential> {
    /// Where the refresh stands; `token` tells its answer from a stale one.
    package enum Phase: Equatable {
        case idle
        /// Raised; starts at the queue's next dispatch (it has its own slot).
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
    /// When the current credential expires, if known.
    package private(set) var expiresAt: MonotonicInstant?
    /// The generation the current credential replaced, and when that one was known to expire: a
    /// rejection of it before then was the server's, not its lifetime's.
    private var replaced: (generation: UInt64, expiresAt: MonotonicInstant?)? = nil
    /// How long before `expiresAt` the credential is stale.
    package let margin: Duration
    /// The least wait between background refreshes (see `RequestQueue.CredentialLifetime`).
    package let backgroundInterval: Duration
    /// Whether the active refresh holds requests back (raised by a rejection or an expiry),
    /// rather than running in the background beside them.
    package private(set) var holdsRequests = false
    /// No background refresh starts before this instant (spacing, and the wait after a failure).
    package private(set) var backgroundNotBefore: MonotonicInstant? = nil
    /// Whether the current credential's next refresh ahead of or at its expiry is left out of the
    /// window: it stays fresh for at least `backgroundInterval` from its installation. Spent by
    /// that refresh, whatever its outcome.
    package private(set) var lifetimePaysNextRefresh = false
    /// Whether the server rejected the current credential before its known expiry while a
    /// refresh was under way: the credential that refresh brings pays for nothing either, as it
    /// would not had the rejection come after it was installed (then the request is resent).
    private var rejectedDuringRefresh = false

    /// `installedAt`: when `credential` was installed (the queue's creation), for `lifetimePaysNextRefresh`.
    package init(
        credential: Credential, generation: UInt64 = 0, limit: Int, window: Duration,
        expiresAt: MonotonicInstant? = nil, margin: Duration = .zero, backgroundInterval: Duration = .seconds(5),
        installedAt: MonotonicInstant
    ) {
        self.credential = credential
        self.generation = generation
        self.limit = limit
        self.window = window
        self.expiresAt = expiresAt
        self.margin = margin
        self.backgroundInterval = backgroundInterval
        self.lifetimePaysNextRefresh = self.staysFresh(installedAt: installedAt)
    }

    /// Whether the current credential is fresh for at least `backgroundInterval` from `now`.
    private func staysFresh(installedAt now: MonotonicInstant) -> Bool {
        guard let expiresAt = self.expiresAt else { return false }
        return now.advanced(by: self.margin).advanced(by: self.backgroundInterval) <= expiresAt
    }

    /// Whether a refresh is raised or running.
    package var isActive: Bool { self.phase != .idle }

    /// Where the current credential stands at `now`.
    package func freshness(at now: MonotonicInstant) -> CredentialFreshness {
        CredentialFreshness.at(now, expiry: self.expiresAt, margin: self.margin)
    }

    /// Records a refresh starting at `now` unless the window is full; `ofLifetime`: raised by the
    /// credential's staleness or expiry, which its lifetime may pay for instead of the window.
    private mutating func admit(now: MonotonicInstant, ofLifetime: Bool = false) -> Bool {
        if ofLifetime && self.lifetimePaysNextRefresh {
            self.lifetimePaysNextRefresh = false
            self.backgroundNotBefore = now.advanced(by: self.backgroundInterval)
            return true
        }
        let windowStart = now.advanced(by: .zero - self.window)
        self.history.removeAll { $0 <= windowStart }
        if self.history.count >= self.limit { return false }
        self.history.append(now)
        self.backgroundNotBefore = now.advanced(by: self.backgroundInterval)
        return true
    }

    /// Decides for a request sent with `sentGeneration` that met an expired credential at `now`;
    /// `token` names the refresh if one must start.
    package mutating func credentialExpired(
        sentGeneration: UInt64, now: MonotonicInstant, token: UInt64
    ) -> ExpiryDecision {
        if sentGeneration < self.generation {
            // Resent with the current credential. When the one it was sent with had not expired,
            // the server rejected a valid credential: the current one, which its refresh brought,
            // buys no refresh either (else a server rejecting every credential, answering after
            // each was replaced, would be refreshed for free as long as they came).
            if let replaced = self.replaced, replaced.generation == sentGeneration,
                let expiry = replaced.expiresAt, now < expiry
            {
                self.lifetimePaysNextRefresh = false
            }
            return .resend
        }
        // A rejection the credential's known expiry explains (it expired while the request was
        // out) is the lifetime's doing: its refresh may be paid by the lifetime. Any other is the
        // server's: the credential it rejected buys no refresh, so a server that rejects every
        // new credential meets the window however long they would have lasted.
        let expiredMeanwhile = self.freshness(at: now) == .expired
        if !expiredMeanwhile { self.lifetimePaysNextRefresh = false }
        if self.phase != .idle {
            if !expiredMeanwhile { self.rejectedDuringRefresh = true }
            // A background refresh already replaces this generation: it now holds requests back.
            self.holdsRequests = true
            return .park
        }
        guard self.admit(now: now, ofLifetime: expiredMeanwhile) else { return .limitExceeded }
        self.phase = .waiting(token: token)
        self.holdsRequests = true
        return .parkAndRefresh(token: token)
    }

    /// Raises a refresh for a credential known to have expired, holding requests back; `false`
    /// when the window is full. Only when no refresh is active.
    package mutating func raiseForExpiry(now: MonotonicInstant, token: UInt64) -> Bool {
        assert(self.phase == .idle, "a refresh is already active")
        guard self.admit(now: now, ofLifetime: true) else { return false }
        self.phase = .waiting(token: token)
        self.holdsRequests = true
        return true
    }

    /// Raises a background refresh if the credential is stale at `now`, none is active, the
    /// spacing since the last one has passed and the window has room; returns whether it did.
    package mutating func raiseInBackground(now: MonotonicInstant, token: UInt64) -> Bool {
        guard self.phase == .idle, self.freshness(at: now) == .stale else { return false }
        if let notBefore = self.backgroundNotBefore, now < notBefore { return false }
        guard self.admit(now: now, ofLifetime: true) else { return false }
        self.phase = .waiting(token: token)
        self.holdsRequests = false
        return true
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

    /// Installs `credential` as generation `generation` (default: the next one), expiring at
    /// `expiresAt`, at `now`, if `token` is the running refresh's. A generation not newer than the
    /// current one installs nothing new.
    package mutating func succeeded(
        token: UInt64, credential: Credential, generation: UInt64? = nil, expiresAt: MonotonicInstant? = nil,
        now: MonotonicInstant
    ) -> Bool {
        guard self.isRunning(token) else { return false }
        let next = generation ?? self.generation + 1
        if next > self.generation {
            self.replaced = (self.generation, self.expiresAt)
            self.credential = credential
            self.generation = next
            self.expiresAt = expiresAt
            self.lifetimePaysNextRefresh = self.staysFresh(installedAt: now) && !self.rejectedDuringRefresh
        }
        self.rejectedDuringRefresh = false
        self.phase = .idle
        self.holdsRequests = false
        return true
    }

    /// What a failed refresh means for the requests.
    package enum FailureOutcome: Equatable {
        /// It held requests back, or the credential has expired: the parked requests fail.
        case failParked
        /// A background refresh of a credential still valid: nothing fails; it is tried again
        /// no earlier than `retryAt`.
        case keepServing(retryAt: MonotonicInstant)
    }

    /// Ends the running refresh without a new credential, if `token` is its; `retryDelay` is the
    /// wait before another background refresh when the credential is still valid at `now`.
    package mutating func failed(token: UInt64, now: MonotonicInstant, retryDelay: Duration) -> FailureOutcome? {
        guard self.isRunning(token) else { return nil }
        self.phase = .idle
        self.rejectedDuringRefresh = false
        let held = self.holdsRequests
        self.holdsRequests = false
        if held || self.freshness(at: now) == .expired { return .failParked }
        let retryAt = now.advanced(by: retryDelay)
        self.backgroundNotBefore = retryAt
        return .keepServing(retryAt: retryAt)
    }

    /// Forgets any refresh (shutdown); its answer will be ignored.
    package mutating func abandon() {
        self.phase = .idle
        self.rejectedDuringRefresh = false
        self.holdsRequests = false
    }
}
