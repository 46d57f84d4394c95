import SerialCore

extension RequestQueue {
    /// How long credentials last, when the policy can tell: with it, the queue refreshes ahead
    /// of expiry instead of after a rejected request (see `CredentialFreshness`).
    ///
    /// - **fresh** (before `expiry − refreshMargin`): requests are sent as usual.
    /// - **stale** (inside the margin): requests are still sent with the valid credential while
    ///   one refresh runs in the background. It holds nothing back and has its own slot beside
    ///   `maximumConcurrent`. If it fails, no request fails: the queue keeps sending with the
    ///   credential and tries again after `retryInterval`, plus up to `retryJitter` of it.
    /// - **expired** (at or past `expiry`): no request is sent with it. Requests park until the
    ///   refresh ends (started at once if none runs): sent with the new credential if it
    ///   succeeds, each failed once with its error if it fails, as after a rejected request.
    ///
    /// ```swift
    /// // The token says when it expires, in seconds since 1970; the queue's clock is monotonic.
    /// policy.lifetime = RequestQueue<API>.CredentialLifetime(refreshMargin: .seconds(60)) { token in
    ///     queue.now.advanced(by: .seconds(expirySeconds(token) - wallClockSeconds()))
    /// }
    /// ```
    ///
    /// **Edge cases.** A credential already expired when the queue is created (a token kept
    /// overnight) is refreshed before the first request is sent: the first requests wait for
    /// that one refresh. A credential that arrives with less than `refreshMargin` left (a margin
    /// longer than its lifetime) is stale from the start: it is used, and replaced in the
    /// background; background refreshes start at least `retryInterval` apart, so such
    /// credentials cannot make the queue refresh in a loop.
    ///
    /// **The refresh limit.** A credential that stays fresh for at least `retryInterval` after it
    /// arrives (`lifetime − refreshMargin ≥ retryInterval`) pays for its own refresh: the first
    /// refresh ahead of or at its expiry is not counted by `refreshLimit`, so tokens of a few
    /// seconds are refreshed for as long as they come, under the default limit, at most one
    /// such refresh per `retryInterval`. Counted: refreshes after a rejected request (the loop
    /// guard: a credential the server rejected before its known expiry pays for nothing more,
    /// nor does the one that replaces it, whether the rejection comes before or after the
    /// replacement arrives; a 401 met because the expiry passed during the request is the
    /// lifetime's), refreshes of a credential fresh for less than that (expired or stale on arrival,
    /// or a margin too long for it), and retries for the same credential after a failure. When
    /// the limit is reached, a background refresh waits for the window instead of failing
    /// anything; one for an expired credential fails the waiting requests with
    /// `RequestError.refreshLimitExceeded`.
    public struct CredentialLifetime: Sendable {
        /// The instant `credential` expires, on the queue's scheduler's clock (`Scheduling.now`);
        /// `nil` when unknown (that credential is then replaced only after a rejected request).
        /// Called once per credential: at `RequestQueue.init` on the caller's thread, then on the
        /// scheduler when a refresh brings a new one.
        public let expiry: @Sendable (_ credential: Credential) -> MonotonicInstant?
        /// How long before its expiry a credential becomes stale. At least zero (zero: refreshed
        /// at its expiry, before any request is sent with it).
        public let refreshMargin: Duration
        /// The least wait between background refreshes, and after a failed one. Greater than zero.
        public let retryInterval: Duration
        /// After a failed background refresh, the wait is `retryInterval` plus a random part of
        /// up to `retryJitter × retryInterval`, so that queues that failed together do not all
        /// retry together. Between 0 and 1.
        public let retryJitter: Double

        /// A lifetime; traps, naming the field, when a value is out of range.
        ///
        /// - Precondition: `refreshMargin >= .zero`, `retryInterval > .zero`, `0 <= retryJitter <= 1`.
        public init(
            refreshMargin: Duration = .seconds(60),
            retryInterval: Duration = .seconds(5),
            retryJitter: Double = 0.5,
            expiry: @escaping @Sendable (_ credential: Credential) -> MonotonicInstant?
        ) {
            if refreshMargin < .zero {
                RequestQueueMisuse.invalidLifetime("refreshMargin", "\(refreshMargin)", "at least zero")
            }
            if retryInterval <= .zero {
                RequestQueueMisuse.invalidLifetime("retryInterval", "\(retryInterval)", "greater than zero")
            }
            if !(retryJitter >= 0 && retryJitter <= 1) {
                RequestQueueMisuse.invalidLifetime("retryJitter", "\(retryJitter)", "between 0 and 1")
            }
            self.expiry = expiry
            self.refreshMargin = refreshMargin
            self.retryInterval = retryInterval
            self.retryJitter = retryJitter
        }

        /// The wait after a failed background refresh: `retryInterval` plus up to `retryJitter` of it.
        func retryDelay(using random: inout some RandomNumberGenerator) -> Duration {
            let extra = self.retryInterval * Double.random(in: 0...self.retryJitter, using: &random)
            return self.retryInterval + extra
        }
    }
}
