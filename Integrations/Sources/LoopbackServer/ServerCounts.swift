/// What a `LoopbackServer`'s handlers saw, counted on the server side (a snapshot).
public struct ServerCounts: Sendable {
    /// One request a handler received.
    public struct Arrival: Sendable, Hashable {
        /// The route: `items`, `fault`, `loop`, `bench`, `token`.
        public var route: String
        /// The `:id` path parameter (or the loop step).
        public var id: String
        /// The bearer token it carried (`nil`: none).
        public var token: String?
        /// The status the handler chose (0: the connection was dropped).
        public var status: Int
        /// The `X-Tag` header, if any.
        public var tag: String?
        /// The W3C `traceparent` header, if any (the trace context the client propagated).
        public var traceparent: String? = nil
    }

    /// Every request received, in arrival order (routes `items`, `fault`, `loop`, `token`; not `bench`).
    public var arrivals: [Arrival] = []
    /// Requests received on every route, `bench` included.
    public var received = 0
    /// `POST /token` calls (refreshes), whatever they answered.
    public var refreshCalls = 0
    /// Tokens issued (successful refreshes).
    public var tokensIssued = 0
    /// Requests answered 401.
    public var rejected = 0
    /// The most requests in the handlers at once.
    public var maximumInFlight = 0
    /// Requests in the handlers now.
    public var inFlight = 0
    /// For each request marked `X-Unique: 1`: how many other requests were in the handlers when it arrived.
    public var othersInFlightWhenUniqueArrived: [Int] = []
    /// Requests that arrived while a request marked `X-Unique: 1` was in the handlers.
    public var arrivedDuringUnique = 0
    /// `GET /fault/:id` answers by kind: `ok`, `500`, `slow`, `drop`.
    public var faults: [String: Int] = [:]
    /// Rotating tokens: what the authorization server saw.
    public var rotation = RotationCounts()

    /// What the rotating authorization server (`POST /oauth/token`, `GET /api/:id`) saw.
    public struct RotationCounts: Sendable {
        /// `POST /oauth/token` calls, whatever they answered.
        public var refreshCalls = 0
        /// Refreshes that rotated the tokens (a new access and refresh token issued).
        public var refreshes = 0
        /// Refreshes that presented a refresh token already used: the first revokes the family.
        public var reuseDetections = 0
        /// Refreshes with the last used refresh token answered with the current pair (`reuseGrace`).
        public var graceAnswers = 0
        /// Whether the token family was revoked (every later refresh and request fails).
        public var revoked = false
        /// When each rotation happened.
        public var refreshedAt: [ContinuousClock.Instant] = []
        /// The `X-Worker` header of each refresh call, in arrival order, and when it arrived.
        public var refreshCallers: [String] = []
        public var refreshCalledAt: [ContinuousClock.Instant] = []
        /// `GET /api/:id` answered 200, by id.
        public var answeredByID: [String: Int] = [:]
        /// `GET /api/:id` answered 401.
        public var rejected = 0
    }

    /// The arrivals of `route`.
    public func arrivals(of route: String) -> [Arrival] {
        self.arrivals.filter { $0.route == route }
    }
}
