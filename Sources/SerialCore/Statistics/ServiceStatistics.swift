/// A service's figures since it was created, in one shape for every service built on a
/// scheduler (`TimerService`, `TimeoutManager`, `CountdownManager`, `Poller`, `RequestQueue`),
/// read with `ServiceStatisticsReporting.serviceStatistics`.
///
/// **Items.** What an *item* is depends on the service: a timer scheduled, a timeout task
/// started, a countdown registered, a poll session started, a request submitted. Each item is
/// counted once when the service accepts it and once when it reaches its one terminal outcome,
/// both under the lock at the point the service decides; completions may still be on their way.
/// Each service's conformance says which outcome kinds it reports and what `late` and `wakeUps`
/// mean for it.
///
/// - Invariant: `accepted == pending + ended`, in every snapshot.
public struct ServiceStatistics: Sendable, Hashable {
    /// Items the service took on.
    public var accepted: Int
    /// Items accepted and not yet ended.
    public var pending: Int
    /// Ended items by terminal outcome kind (for example `"fired"` or `"cancelled"`); kinds
    /// the service reports are present even at zero.
    public var outcomes: [String: Int]
    /// Items that ended after their deadline by more than the service's own resolution, as
    /// the service defines it; 0 where the concept does not apply.
    public var late: Int
    /// Delayed wake-ups the service's scheduler ran for it, where the service counts them; 0
    /// otherwise.
    public var wakeUps: Int

    /// Items that reached a terminal outcome: the sum of `outcomes`.
    public var ended: Int { self.outcomes.values.reduce(0, +) }

    /// A snapshot with the given figures.
    public init(accepted: Int, pending: Int, outcomes: [String: Int], late: Int = 0, wakeUps: Int = 0) {
        self.accepted = accepted
        self.pending = pending
        self.outcomes = outcomes
        self.late = late
        self.wakeUps = wakeUps
    }
}

/// A service that reports its figures as a `ServiceStatistics`.
public protocol ServiceStatisticsReporting: AnyObject, Sendable {
    /// The service's figures now, read in one lock trip.
    var serviceStatistics: ServiceStatistics { get }
}
