import SerialCore
import SerialTimers

/// What `VirtualScheduler.clock` is made of: the clock (on a timer service with a 1 ns tick,
/// so virtual deadlines are kept exactly) and the count of its sleepers.
struct VirtualClockParts {
    let clock: WheelClock
    /// +1 for each sleep once its timer is armed, -1 for each of those that ended.
    let sleepers: CallbackRecorder<Int>
}

extension VirtualScheduler {
    /// A `WheelClock` on this scheduler's virtual time: the test twin of a `WheelClock` on a
    /// queue, for async code that sleeps.
    ///
    /// ```swift
    /// let scheduler = VirtualScheduler()
    /// let clock = scheduler.clock
    /// let woke = CallbackRecorder<MonotonicInstant>("woke")
    /// let task = Task { try await clock.sleep(for: .seconds(5)); woke.record(clock.now) }
    /// try await scheduler.waitUntilAsleep(1)                  // no real sleeping
    /// scheduler.advance(by: .seconds(5))                      // resumes it, at start + 5 s
    /// let when = try await woke.wait(forCount: 1)
    /// ```
    ///
    /// Sleeps end only when the test advances the scheduler: on the advancing thread, in
    /// deadline order (ties in the order they were armed), each at exactly its deadline
    /// (`now` reads it), never before. A resumed task then runs on its own executor; the
    /// scheduler does not wait for it, so a test that needs what it does next waits for that
    /// (a `CallbackRecorder`) before advancing further. Cancelling a sleeping task ends its
    /// sleep at once with `CancellationError`; `shutdown(_:)` ends every sleep with
    /// `TimerServiceError.schedulerShutDown`.
    ///
    /// The same clock is returned every time, until `shutdown(_:)`.
    public var clock: WheelClock {
        self.clockParts.withLock { parts in
            if let parts { return parts.clock }
            let sleepers = CallbackRecorder<Int>("\(self.label) sleepers")
            let timers = TimerService(scheduler: self, tick: .nanoseconds(1))
            let made = VirtualClockParts(
                clock: WheelClock(timers: timers, sleepObserver: { sleepers.record($0) }), sleepers: sleepers)
            parts = made
            return made.clock
        }
    }

    /// How many tasks sleep on `clock` now, their timers armed.
    public var sleeperCount: Int {
        let sleepers = self.clockParts.withLock { $0?.sleepers }
        return sleepers?.values.reduce(0, +) ?? 0
    }

    /// Suspends until at least `count` tasks sleep on `clock`, without sleeping itself: the
    /// way a test knows the code under test has reached its `sleep` before it advances time.
    /// A sleep counts once its timer is armed, so an advance made after this returns ends every
    /// counted sleep whose deadline it reaches.
    ///
    /// - Throws: ``RecorderTimeout`` when `timeout` (real time) passes first, naming how many
    ///   sleep; `CancellationError` when the waiting task is cancelled.
    public func waitUntilAsleep(
        _ count: Int, timeout: Duration = .seconds(10), fileID: String = #fileID, line: Int = #line
    ) async throws {
        _ = self.clock  // made now, so the recorder exists
        guard let sleepers = self.clockParts.withLock({ $0?.sleepers }) else {
            throw RecorderTimeout(description: "VirtualScheduler \"\(self.label)\": shut down; no task can sleep on it")
        }
        try await sleepers.wait(
            until: "\(count) task\(count == 1 ? "" : "s") asleep on the clock", timeout: timeout, fileID: fileID,
            line: line
        ) { $0.reduce(0, +) >= count }
    }
}
