/// How urgently a request runs. `low < default < high < unique`.
///
/// **Ordering.** The queue starts the pending request with the highest *effective* priority
/// first; equal effective priorities start in submission order (FIFO). A request that is sent
/// again (retry, credential redirect) keeps its place in that order.
///
/// **Aging.** A waiting `low`, `default` or `high` request rises one level for every
/// `agingInterval` it has waited since it was submitted, up to `high`; so `low` work waits at
/// most two intervals behind a steady stream of `high` work before it competes with it in FIFO
/// order. Aging never reaches `unique`: only a real unique request passes the unique gate.
///
/// **Unique.** A `unique` request runs alone: while one is queued or running, no other request
/// starts; requests already in flight finish normally, and it starts only once none is left.
/// Only one unique request runs at a time.
///
/// **The credential refresh.** The refresh the queue starts by itself has its own slot, beside
/// `maximumConcurrent`: it starts at once, even while every slot, every kind or a unique request
/// is held (those may be the very requests waiting for it). Started after a rejected request or at
/// a known expiry, it holds requests back as a unique request does (none starts until it ends, and
/// it goes before any unique request of the caller's), but it does not wait for the requests in
/// flight. They were sent with the credential it replaces, so waiting for them would only delay it
/// by their latency; each ends normally, and one that then meets the expired credential is sent
/// again at once with the new one. A background refresh of a stale credential (see
/// `RequestQueue.CredentialLifetime`) holds nothing back.
public enum RequestPriority: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    /// Background work; starts when nothing more urgent waits (or once it has aged).
    case low = 0
    /// The usual priority.
    case `default` = 1
    /// Starts before `default` and `low` work.
    case high = 2
    /// Runs alone and holds every other request back while it is queued or running.
    case unique = 3

    /// Priority order: low < default < high < unique.
    public static func < (lhs: RequestPriority, rhs: RequestPriority) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// The level this priority competes at after waiting `waited`, when waiting one
    /// `agingInterval` raises it by one level (`nil`: no aging). Capped at `high`; `unique`
    /// stays `unique`.
    ///
    /// - Complexity: O(1).
    public func effectivePriority(waited: Duration, agingInterval: Duration?) -> RequestPriority {
        guard self != .unique, let agingInterval, waited > .zero else { return self }
        let steps = waited.saturatingNanoseconds / max(1, agingInterval.saturatingNanoseconds)
        let raised = Int64(self.rawValue) + min(steps, Int64(RequestPriority.high.rawValue))
        return RequestPriority(rawValue: Int(min(raised, Int64(RequestPriority.high.rawValue))))!
    }

    /// The priority's name, for logs.
    public var description: String {
        switch self {
        case .low: return "low"
        case .default: return "default"
        case .high: return "high"
        case .unique: return "unique"
        }
    }
}
