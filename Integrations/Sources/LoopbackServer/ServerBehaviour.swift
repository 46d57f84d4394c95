/// How a `LoopbackServer` behaves; change it while the server runs with
/// `LoopbackServer.configure`.
public struct ServerBehaviour: Sendable {
    /// A token stops being accepted after this many accepted requests (`nil`: no limit).
    public var tokenRequestLimit: Int?
    /// The server's first token stops being accepted this long after the server started
    /// (`nil`: no limit); tokens issued later by `POST /token` have no lifetime, so that a test's
    /// re-sent requests cannot meet a second expiry however slow the machine is.
    public var firstTokenLifetime: Duration?
    /// Every token, the first included, stops being accepted this long after it was issued
    /// (`nil`: tokens do not age). With it, every token issued stays accepted until its own
    /// expiry, not only the newest (as signed tokens do), and `POST /token` answers
    /// `<token> <milliseconds left>`.
    public var tokenLifetime: Duration?
    /// A token `GET /bench` always accepts, whatever `tokenLifetime` says (for the benchmark's
    /// ways without a queue to refresh).
    public var benchPassToken: String?
    /// Reject every token, fresh ones included (a server the client can never satisfy).
    public var rejectEveryToken = false
    /// `POST /token` answers 500 instead of issuing a token.
    public var refreshFails = false
    /// `POST /token` waits this long before answering (so that expiries pile up behind it).
    public var refreshDelay: Duration = .zero
    /// `POST /token` answers only once this is false again (set by `configure`), or 30 s later: a
    /// test holds the refresh until the client has met every expiry it expects, whatever the
    /// load, where a delay only makes that likely.
    public var holdsRefresh = false
    /// `GET /fault/:id`: the chances, out of 100, of a 500, of an answer after `slowDelay`, and
    /// of a connection closed without an answer; the rest answer 200 at once.
    public var faultPercentages: (serverError: Int, slow: Int, drop: Int) = (0, 0, 0)
    /// How long a slow `GET /fault/:id` takes.
    public var slowDelay: Duration = .milliseconds(400)
    /// Rotating tokens (`POST /oauth/token`, `GET /api/:id`): the access token of generation `g`
    /// is accepted for `accessTokenUses[g]` requests, then expires; generations past the list
    /// never expire. Empty: access tokens never expire.
    public var accessTokenUses: [Int] = []
    /// `POST /oauth/token`: this many of the first refresh calls hang until the server stops,
    /// without rotating (a client killed before the server acted on its refresh).
    public var hangingRefreshes = 0
    /// `POST /oauth/token` with the refresh token used last answers the current pair instead of
    /// revoking the family (a server's grace window for retries), counted in `graceAnswers`.
    public var reuseGrace = false
    /// Rotating tokens: each access token, the first included, lasts this long after it was
    /// issued, and stays accepted until then even after a newer one exists (as signed tokens
    /// do; `accessTokenUses` is then ignored). `POST /oauth/token` then answers
    /// `<access> <refresh> <expiry in Unix milliseconds>`.
    public var accessTokenLifetime: Duration?
    /// `POST /oauth/token` waits this long before rotating.
    public var rotationDelay: Duration = .zero

    /// Tokens never expire, the refresh succeeds at once, no faults.
    public init() {}
}
