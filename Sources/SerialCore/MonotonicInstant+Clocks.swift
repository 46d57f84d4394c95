/// `MonotonicInstant` as an instant of Swift's clocks, and its conversions to and from
/// `SuspendingClock.Instant`.
///
/// **One epoch.** On Linux, Swift's `SuspendingClock` reads `CLOCK_MONOTONIC`, the clock this
/// library's queues and timers use, so an instant means the same moment on both and converts
/// exactly, with no clock read (`ContinuousClock` reads `CLOCK_BOOTTIME`, which also counts
/// time the system spent suspended, and has no exact conversion). A test reads both clocks
/// and checks it.
extension MonotonicInstant: InstantProtocol {
    /// The same moment on Swift's `SuspendingClock` (both count from `CLOCK_MONOTONIC`'s origin).
    ///
    /// - Complexity: O(1), no clock read.
    public init(_ instant: SuspendingClock.Instant) {
        let (seconds, attoseconds) = Self.sinceOrigin(instant).components
        guard seconds >= 0 else {
            self.init(nanoseconds: 0)
            return
        }
        let (scaled, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, overflow2) = scaled.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        self.init(nanoseconds: overflow || overflow2 ? .max : sum)
    }

    /// This moment on Swift's `SuspendingClock`.
    public var suspendingInstant: SuspendingClock.Instant {
        let seconds = Int64(self.nanoseconds / 1_000_000_000)
        let nanoseconds = Int64(self.nanoseconds % 1_000_000_000)
        return Self.instant(sinceOrigin: .seconds(seconds) + .nanoseconds(nanoseconds))
    }

    // `SuspendingClock.Instant` is a single `Duration` since the clock's origin, and has no
    // public initializer from one: these two reinterpret it, a layout the test of the shared
    // epoch checks on every toolchain this is built with.
    private static func sinceOrigin(_ instant: SuspendingClock.Instant) -> Duration {
        unsafeBitCast(instant, to: Duration.self)
    }

    private static func instant(sinceOrigin duration: Duration) -> SuspendingClock.Instant {
        unsafeBitCast(duration, to: SuspendingClock.Instant.self)
    }
}
