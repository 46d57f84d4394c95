import SerialCore
import Synchronization

/// The clock a `CountdownManager` measures remaining time on: one that keeps counting while the
/// system is suspended, so a countdown's remaining time is right on the first tick after a resume.
///
/// A countdown stores a deadline on this clock, never a decremented counter. The manager reads
/// the clock once per tick and once per registration, while holding its lock.
///
/// Conformers must be monotonic (never go backwards) and must not call into a `CountdownManager`
/// (the read happens under the manager's lock; calling back would deadlock).
public protocol CountdownClock: Sendable {
    /// The time elapsed since this clock's fixed origin, including any time the system spent
    /// suspended.
    func now() -> Duration
}

/// Swift's `ContinuousClock`, which on Linux reads `CLOCK_BOOTTIME`: it keeps counting while the
/// system is suspended. The default clock of a `CountdownManager`.
public struct ContinuousCountdownClock: CountdownClock {
    private let origin: ContinuousClock.Instant

    /// A clock whose origin is the moment of this call.
    public init() {
        self.origin = .now
    }

    /// The time since this clock was created, suspension included.
    ///
    /// - Complexity: O(1); one `clock_gettime(CLOCK_BOOTTIME)` through the vDSO.
    public func now() -> Duration {
        ContinuousClock.now - self.origin
    }
}

/// A boot clock for tests: it follows a scheduler's clock (for example a `VirtualScheduler`), and
/// `simulateSuspend(for:)` makes it jump ahead while the scheduler's clock does not, the way
/// `CLOCK_BOOTTIME` runs ahead of `CLOCK_MONOTONIC` after the machine slept.
///
/// ```swift
/// let scheduler = VirtualScheduler()
/// let clock = VirtualBootClock(following: scheduler)
/// let manager = CountdownManager(interval: .seconds(1), queue: scheduler, clock: clock)
/// manager.register(receiver, for: .seconds(10)) { receiver, tick, stop in print(tick.remaining) }
/// scheduler.advance(by: .seconds(2))          // ticks: 9 s, 8 s
/// clock.simulateSuspend(for: .seconds(5))     // the machine sleeps 5 s
/// scheduler.advance(by: .seconds(1))          // one tick: 2 s left, 5 ticks missed
/// ```
///
/// Thread-safe: reads and jumps may come from any thread.
public final class VirtualBootClock: CountdownClock {
    private let scheduler: any Scheduling
    private let suspendedNanoseconds = Atomic<Int64>(0)

    /// A clock that reads `scheduler.now` plus the total simulated suspension.
    public init(following scheduler: any Scheduling) {
        self.scheduler = scheduler
    }

    /// The scheduler's time (nanoseconds since its origin) plus every simulated suspension.
    public func now() -> Duration {
        let scheduled = Int64(clamping: self.scheduler.now.nanoseconds)
        return .nanoseconds(scheduled.saturatingAdding(self.suspendedNanoseconds.load(ordering: .acquiring)))
    }

    /// The total time suspended so far.
    public var suspended: Duration {
        .nanoseconds(self.suspendedNanoseconds.load(ordering: .acquiring))
    }

    /// Jumps this clock forward by `duration` without moving the scheduler's clock, as if the
    /// system had been suspended that long.
    ///
    /// - Precondition: `duration` is not negative; a boot clock never goes back.
    public func simulateSuspend(for duration: Duration) {
        let nanoseconds = duration.saturatingNanoseconds
        guard nanoseconds >= 0 else { CountdownMisuse.negativeSuspend(duration) }
        self.suspendedNanoseconds.add(nanoseconds, ordering: .acquiringAndReleasing)
    }
}
