extension RequestQueue {
    /// The limits of a `RequestQueue`. Invalid values trap in `RequestQueue.init` with a message
    /// naming the field (they are programmer errors, not conditions to handle at run time); every
    /// field is checked there, so a valid configuration never traps later. Durations may be as
    /// long as `Duration` allows: where they meet the clock they saturate at the end of time.
    public struct Configuration: Sendable {
        /// Requests in flight at once. The credential refresh is not counted: it has a slot of its
        /// own, so that it never waits behind the requests waiting for it. At least 1.
        public var maximumConcurrent: Int
        /// Sends after the first one for retryable outcomes. At least 0.
        public var maximumRetries: Int
        /// The wait before each retry.
        public var retryBackoff: RetryBackoff
        /// How many times one request may meet an expired credential and be sent again; one
        /// more fails it with `RequestError.tooManyRedirects`. At least 0.
        public var maximumRedirects: Int
        /// At most this many credential refreshes may start within `refreshWindow`; a refresh
        /// beyond that fails the waiting requests with `RequestError.refreshLimitExceeded`.
        /// With a known lifetime, a credential's own refresh ahead of or at its expiry is not
        /// counted when it stayed fresh for `retryInterval` (see `CredentialLifetime`). At least 1.
        public var refreshLimit: Int
        /// The window `refreshLimit` counts in. Greater than zero.
        public var refreshWindow: Duration
        /// How long the refresh may take before the waiting requests fail with
        /// `RequestError.refreshTimedOut`. Greater than zero.
        public var refreshTimeout: Duration
        /// Waiting this long raises a request's priority one level (up to `high`); `nil` turns
        /// aging off. Greater than zero when set.
        public var agingInterval: Duration?
        /// The timeout of requests submitted without one (`nil`: none). Greater than zero when set.
        public var defaultTimeout: Duration?

        /// A configuration; every parameter has a usable default.
        public init(
            maximumConcurrent: Int = 4,
            maximumRetries: Int = 2,
            retryBackoff: RetryBackoff = RetryBackoff(initial: .milliseconds(200), maximum: .seconds(5)),
            maximumRedirects: Int = 2,
            refreshLimit: Int = 3,
            refreshWindow: Duration = .seconds(60),
            refreshTimeout: Duration = .seconds(30),
            agingInterval: Duration? = .seconds(5),
            defaultTimeout: Duration? = nil
        ) {
            self.maximumConcurrent = maximumConcurrent
            self.maximumRetries = maximumRetries
            self.retryBackoff = retryBackoff
            self.maximumRedirects = maximumRedirects
            self.refreshLimit = refreshLimit
            self.refreshWindow = refreshWindow
            self.refreshTimeout = refreshTimeout
            self.agingInterval = agingInterval
            self.defaultTimeout = defaultTimeout
        }

        /// Traps, naming the field, when a value is out of range.
        func validate() {
            func require(_ ok: Bool, _ field: String, _ value: Any, _ rule: String) {
                if !ok { RequestQueueMisuse.invalidConfiguration(field, "\(value)", rule) }
            }
            require(self.maximumConcurrent >= 1, "maximumConcurrent", self.maximumConcurrent, "at least 1")
            require(self.maximumRetries >= 0, "maximumRetries", self.maximumRetries, "at least 0")
            require(self.maximumRedirects >= 0, "maximumRedirects", self.maximumRedirects, "at least 0")
            require(self.refreshLimit >= 1, "refreshLimit", self.refreshLimit, "at least 1")
            require(self.refreshWindow > .zero, "refreshWindow", self.refreshWindow, "greater than zero")
            require(self.refreshTimeout > .zero, "refreshTimeout", self.refreshTimeout, "greater than zero")
            if let aging = self.agingInterval {
                require(aging > .zero, "agingInterval", aging, "greater than zero, or nil for no aging")
            }
            if let timeout = self.defaultTimeout {
                require(timeout > .zero, "defaultTimeout", timeout, "greater than zero, or nil for no timeout")
            }
            let backoff = self.retryBackoff
            require(backoff.initial >= .zero, "retryBackoff.initial", backoff.initial, "at least zero")
            require(backoff.multiplier.isFinite, "retryBackoff.multiplier", backoff.multiplier, "finite")
            require(backoff.multiplier >= 1, "retryBackoff.multiplier", backoff.multiplier, "at least 1")
            require(
                backoff.maximum >= backoff.initial, "retryBackoff.maximum", backoff.maximum,
                "at least retryBackoff.initial (\(backoff.initial))")
        }
    }
}
