import SerialCore

/// Where a credential with a known expiry stands on the queue's clock (see
/// `RequestQueue.CredentialLifetime`):
///
/// ```
///   installed          expiry − refreshMargin        expiry
///   |------- fresh ------------|-------- stale --------|------- expired ------->
///   sent as usual              sent as usual; one      never sent: requests park
///                              background refresh      until the refresh ends
/// ```
///
/// A credential whose expiry the policy does not know is always `fresh`: it is replaced only
/// after a response says it expired.
public enum CredentialFreshness: Sendable, Hashable, CustomStringConvertible {
    /// Before its refresh margin (or its expiry unknown): requests are sent with it.
    case fresh
    /// Inside its refresh margin, not yet expired: requests are still sent with it while one
    /// refresh runs in the background.
    case stale
    /// At or past its expiry: no request is sent with it; requests wait for the refresh.
    case expired

    /// Where a credential expiring at `expiry` (`nil`: unknown) stands at `now` with `margin`.
    static func at(_ now: MonotonicInstant, expiry: MonotonicInstant?, margin: Duration) -> Self {
        guard let expiry else { return .fresh }
        if now >= expiry { return .expired }
        return now >= expiry.advanced(by: .zero - margin) ? .stale : .fresh
    }

    /// The state's name, for logs.
    public var description: String {
        switch self {
        case .fresh: return "fresh"
        case .stale: return "stale"
        case .expired: return "expired"
        }
    }
}
