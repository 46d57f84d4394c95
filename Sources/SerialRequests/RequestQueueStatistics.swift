/// Counters of a `RequestQueue` since it was created, read with `RequestQueue.statistics`.
/// Each is updated when the queue decides (completions are delivered just after, on the scheduler).
public struct RequestQueueStatistics: Sendable, Hashable {
    /// Requests submitted (including those refused after shutdown).
    public var submitted = 0
    /// Requests ended: `succeeded + servedFromCache + failed`.
    public var completed: Int { self.succeeded + self.servedFromCache + self.failed }
    /// Requests ended with a fresh response.
    public var succeeded = 0
    /// Requests ended with a cached response.
    public var servedFromCache = 0
    /// Requests ended with an error (cancel, timeout and shutdown included).
    public var failed = 0
    /// Requests ended by `cancel()`.
    public var cancelled = 0
    /// Requests ended by their timeout.
    public var timedOut = 0
    /// Calls to `RequestTransport.send`, retries and re-sends included.
    public var sends = 0
    /// Retries scheduled after retryable outcomes.
    public var retries = 0
    /// Expired-credential outcomes met.
    public var expiries = 0
    /// Expired requests sent again at once because a newer credential already existed.
    public var resentWithoutRefresh = 0
    /// Requests parked behind a refresh and sent again after it succeeded.
    public var resentAfterRefresh = 0
    /// Credential refreshes started: each asks the `CredentialCoordinator`, then calls
    /// `Policy.refresh` or adopts the credential another holder published.
    public var refreshesStarted = 0
    /// Refreshes that produced a new credential (`credentialsAdopted` included).
    public var refreshesSucceeded = 0
    /// Refreshes that ended with a credential another holder published through the shared
    /// `CredentialCoordinator`, without calling `Policy.refresh` here (or after this queue's own
    /// publish was refused).
    public var credentialsAdopted = 0
    /// Publishes the coordinator refused because the lease had been superseded: the credential
    /// refreshed here was dropped for the one another holder published.
    public var publishesRefused = 0
    /// Refreshes started ahead of a rejection, from a known lifetime (`Policy.lifetime`): in the
    /// background for a stale credential, or before sending for an expired one.
    public var refreshesAhead = 0
    /// Refreshes that failed or timed out (`backgroundRefreshesFailed` included).
    public var refreshesFailed = 0
    /// Background refreshes that failed or timed out while the credential was still valid: no
    /// request failed; each is tried again after `CredentialLifetime.retryInterval` and jitter.
    public var backgroundRefreshesFailed = 0
    /// Requests parked before a send because the credential was known to have expired (each
    /// time it happened): requests that would otherwise have been sent to be rejected.
    public var heldForExpiry = 0
    /// Refreshes refused by the refresh window.
    public var refreshesRefused = 0
    /// Transport or refresh answers ignored because their attempt had already ended (late,
    /// duplicate, or after cancel, timeout or shutdown).
    public var ignoredAnswers = 0

    /// All counters at zero.
    public init() {}
}
