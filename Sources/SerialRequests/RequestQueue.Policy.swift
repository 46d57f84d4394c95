extension RequestQueue {
    /// The business rules the queue applies without knowing them: what a response means, how a
    /// request is rebuilt for a new credential, how the credential is refreshed, and the cache.
    ///
    /// **Threads.** Every closure runs on the queue's scheduler, one at a time, never while the
    /// queue holds its lock; they may call `submit` and `cancel`.
    public struct Policy: Sendable {
        /// What an outcome means for `request` (success, failure, retry, expired credential, cache).
        public var classify:
            @Sendable (_ request: Request, _ outcome: Result<Response, any Error>) -> ResponseDisposition
        /// `request` rebuilt for `credential`: called before sending a request built for an older
        /// credential (e.g. to re-sign it). The default returns the request unchanged.
        public var rebuild: @Sendable (_ request: Request, _ credential: Credential) -> Request
        /// Obtains a new credential to replace `expired`; reports it (or an error) through
        /// `completion`, from any thread, once (later calls are ignored). It has its own slot:
        /// it starts at once, whatever `maximumConcurrent`, kinds and unique requests hold. After a
        /// rejected request (or at expiry), nothing else starts until it ends; requests already in
        /// flight go on (see `RequestPriority`); a background refresh of a stale credential holds
        /// nothing back. It runs in the `WorkContext` of the first request parked for it (none for
        /// a background refresh), however its lease arrived.
        public var refresh: @Sendable (
            _ expired: Credential, _ completion: @escaping @Sendable (Result<Credential, any Error>) -> Void
        ) -> Void
        /// The cached response for `request`, used when `classify` says `.useCache`.
        /// The default has none.
        public var cachedResponse: @Sendable (_ request: Request) -> Response?
        /// Called with every fresh successful response before its completion, to fill the cache.
        /// The default does nothing.
        public var storeResponse: @Sendable (_ request: Request, _ response: Response) -> Void
        /// How long credentials last, when known: the queue then refreshes ahead of expiry and
        /// never sends an expired one (see `CredentialLifetime`). The default, `nil`, refreshes
        /// only after `classify` says `.credentialExpired`.
        public var lifetime: CredentialLifetime?

        /// A policy from its rules; only `classify` and `refresh` are required.
        public init(
            classify: @escaping @Sendable (Request, Result<Response, any Error>) -> ResponseDisposition,
            rebuild: @escaping @Sendable (Request, Credential) -> Request = { request, _ in request },
            refresh: @escaping @Sendable (
                Credential, @escaping @Sendable (Result<Credential, any Error>) -> Void
            ) -> Void,
            cachedResponse: @escaping @Sendable (Request) -> Response? = { _ in nil },
            storeResponse: @escaping @Sendable (Request, Response) -> Void = { _, _ in },
            lifetime: CredentialLifetime? = nil
        ) {
            self.classify = classify
            self.rebuild = rebuild
            self.refresh = refresh
            self.cachedResponse = cachedResponse
            self.storeResponse = storeResponse
            self.lifetime = lifetime
        }
    }
}
