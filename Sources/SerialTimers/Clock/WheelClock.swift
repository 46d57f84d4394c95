import SerialCore

/// A Swift `Clock` whose sleeps are timers on a `TimerService`'s wheel.
///
/// ```swift
/// let clock = WheelClock()                         // the process's shared timer service
/// try await clock.sleep(for: .milliseconds(250))   // one wheel timer; no thread, no Dispatch
/// ```
///
/// **Sleeping.** `sleep(until:tolerance:)` arms one timer and suspends the task; the timer's
/// callback resumes it. Cancelling the task cancels the timer at once, which unlinks it from
/// the wheel and frees it then (not at the deadline, as a sleep on a Dispatch timer does), and
/// the sleep throws `CancellationError`. Exactly one of the two happens.
///
/// **Time.** Instants are `MonotonicInstant`s on the service's scheduler: `CLOCK_MONOTONIC` for
/// a `SerialQueue` (the same epoch as Swift's `SuspendingClock` on Linux, so instants convert
/// exactly), or virtual time for a `VirtualScheduler` (whose `clock` is one of these). A sleep
/// never ends before its deadline; how late it may end is its tolerance (the timer service's
/// tick when `nil`; `.zero` for a precise sleep, see `TimerService`).
///
/// **Failure.** A sleep the service refuses (stopped, its scheduler shut down, or
/// `maximumPending` reached) throws that `TimerServiceError` at once; a sleep pending when the
/// service stops or its scheduler shuts down throws `TimerServiceError.stopped` or
/// `.schedulerShutDown` then.
public struct WheelClock: Clock, Sendable {
    /// The clock's instants: the timer service's scheduler time.
    public typealias Instant = MonotonicInstant

    /// The service whose wheel holds this clock's sleeps.
    public let timers: TimerService
    /// Told +1 once a sleep's timer is armed and -1 when that sleep ends (a test clock counts
    /// sleepers with it). Called under the sleeper's lock: it must not call back into the clock.
    let sleepObserver: (@Sendable (Int) -> Void)?

    /// A clock on the process's shared timer service (one `SerialQueue`, "WheelClock", started
    /// on first use, with a 1 ms tick).
    public init() {
        self.init(timers: WheelClock.sharedTimers)
    }

    /// A clock whose sleeps are timers on `timers` (and end on its scheduler).
    public init(timers: TimerService) {
        self.init(timers: timers, sleepObserver: nil)
    }

    package init(timers: TimerService, sleepObserver: (@Sendable (Int) -> Void)?) {
        self.timers = timers
        self.sleepObserver = sleepObserver
    }

    /// The shared service behind `init()`.
    private static let sharedTimers = TimerService(scheduler: SerialQueue(label: "WheelClock"))

    /// The scheduler's current time.
    public var now: MonotonicInstant { self.timers.scheduler.now }

    /// The wheel's tick: with the default tolerance, a sleep ends at most this much after its
    /// deadline on a punctual scheduler.
    public var minimumResolution: Duration { self.timers.tick }

    /// Suspends the calling task until `deadline` (a past deadline: until the next tick).
    ///
    /// - Parameters:
    ///   - deadline: when to wake, on the scheduler's clock.
    ///   - tolerance: how late the sleep may end: `nil` for the service's default (one tick),
    ///     `.zero` for as close to the deadline as the scheduler wakes; more lets sleeps share
    ///     wake-ups.
    /// - Throws: `CancellationError` when the task is cancelled first (also before the call: then
    ///   nothing is armed); a `TimerServiceError` when the service refuses or ends the timer.
    /// - Complexity: O(1): one timer armed, and cancelled at once on cancellation.
    public func sleep(until deadline: MonotonicInstant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let sleeper = Sleeper(observer: self.sleepObserver)
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                sleeper.start(continuation, timers: self.timers, deadline: deadline, tolerance: tolerance)
            }
        } onCancel: {
            RuntimeCallback.run { sleeper.cancel() }  // under the runtime's lock: see RuntimeCallback
        }
    }
}

extension TimerStatus {
    /// Why a timer that ended without firing did: what a sleep or a deadline on it throws.
    var whyEndedUnrun: TimerServiceError {
        if case .schedulerShutDown(let reason) = self { return .schedulerShutDown(reason) }
        return .stopped
    }
}
