import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// Fixed delay, as the docs give it: a one-shot timer whose callback re-arms its own handle
/// with `reschedule(after:)` (the kernel's `mod_timer` on a running timer, Tokio's
/// `Sleep::reset`). Virtual time.
@Suite("TimerService fixed delay")
struct TimerFixedDelayTests {
    @Test func aOneShotTimerReArmedFromItsOwnCallbackFiresAgainAtTheNewDeadline() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        let fired = LockedValue<[MonotonicInstant]>([])
        let results = LockedValue<[TimerReschedule]>([])
        let box = LockedValue<TimerHandle?>(nil)
        let handle = try timers.schedule(after: .milliseconds(10)) {
            let count = fired.withLock { fired in
                fired.append(scheduler.now)
                return fired.count
            }
            guard count < 5, let handle = box.withLock({ $0 }) else { return }
            #expect(handle.status == .fired, "inside its callback, before the re-arm")
            results.withLock { $0.append(handle.reschedule(after: .milliseconds(10))) }
            #expect(handle.status == .pending && handle.isPending, "re-armed from its callback")
        }
        box.withLock { $0 = handle }
        scheduler.advance(by: .seconds(1))
        #expect(results.withLock { $0 } == Array(repeating: .movedToNewDeadline, count: 4))
        #expect(fired.withLock { $0 } == (1...5).map { start + .milliseconds(10 * $0) })
        #expect(handle.status == .fired)
        #expect(timers.pendingCount == 0)
        #expect(timers.serviceStatistics.outcomes["fired"] == 1, "one timer, fired once for good")
        #expect(timers.serviceStatistics.pending == 0)
        // After its callback returned, the callback is gone: too late, as before.
        #expect(handle.reschedule(after: .milliseconds(10)) == .firedAtOldDeadline)
    }

    @Test func aTimerReArmedFromItsCallbackCanStillBeCancelledOrStopped() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let runs = TestCounter()
        let box = LockedValue<TimerHandle?>(nil)
        let handle = try timers.schedule(after: .milliseconds(10)) {
            runs.increment()
            _ = box.withLock { $0 }?.reschedule(after: .milliseconds(10))
        }
        box.withLock { $0 = handle }
        scheduler.advance(by: .milliseconds(35))
        #expect(runs.value == 3)
        #expect(handle.cancel())
        #expect(handle.status == .cancelled)
        scheduler.advance(by: .seconds(1))
        #expect(runs.value == 3)
        box.withLock { $0 = nil }
        #expect(timers.stop() == 0)
    }

    /// How a timer stands before it is re-armed, and how it was made so.
    enum Start: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case defaultTolerance, precise, coalesced, defaultMadePrecise

        var testDescription: String { self.rawValue }

        /// Schedules the timer due `delay` from now, standing as `self` says.
        func schedule(
            on timers: TimerService, after delay: Duration, _ callback: @escaping @Sendable () -> Void
        ) throws -> TimerHandle {
            switch self {
            case .defaultTolerance: return try timers.schedule(after: delay, callback)
            case .precise: return try timers.schedule(after: delay, tolerance: .zero, callback)
            case .coalesced: return try timers.schedule(after: delay, tolerance: .seconds(1), callback)
            case .defaultMadePrecise:
                // A default timer has no room for a tolerance: it is precise "from now on".
                let handle = try timers.schedule(after: .seconds(30), callback)
                #expect(handle.reschedule(after: delay, tolerance: .zero) == .movedToNewDeadline)
                return handle
            }
        }
    }

    /// One case: how the timer stands, the tolerance of the re-arm 10 ms out (`nil`: keep), and
    /// how long after the re-arm it must fire on a 100 ms tick.
    struct Rearm: Sendable, CustomTestStringConvertible {
        let start: Start
        let tolerance: Duration?
        let firesAfter: Duration

        var testDescription: String {
            "\(self.start.rawValue), re-armed with \(self.tolerance.map { "\($0)" } ?? "nil")"
        }

        static let all: [Rearm] = [
            Rearm(start: .defaultTolerance, tolerance: nil, firesAfter: .milliseconds(100)),
            Rearm(start: .defaultTolerance, tolerance: .zero, firesAfter: .milliseconds(10)),
            Rearm(start: .defaultTolerance, tolerance: .milliseconds(50), firesAfter: .milliseconds(10)),
            Rearm(start: .defaultTolerance, tolerance: .seconds(1), firesAfter: .milliseconds(100)),  // keeps its tick
            Rearm(start: .precise, tolerance: nil, firesAfter: .milliseconds(10)),
            Rearm(start: .precise, tolerance: .zero, firesAfter: .milliseconds(10)),
            Rearm(start: .precise, tolerance: .seconds(1), firesAfter: .milliseconds(1_000)),
            Rearm(start: .coalesced, tolerance: nil, firesAfter: .milliseconds(1_000)),
            Rearm(start: .coalesced, tolerance: .zero, firesAfter: .milliseconds(10)),
            Rearm(start: .coalesced, tolerance: .seconds(1), firesAfter: .milliseconds(1_000)),
            Rearm(start: .defaultMadePrecise, tolerance: nil, firesAfter: .milliseconds(10)),
            Rearm(start: .defaultMadePrecise, tolerance: .zero, firesAfter: .milliseconds(10)),
            Rearm(start: .defaultMadePrecise, tolerance: .seconds(1), firesAfter: .milliseconds(100)),
        ]
    }

    /// `reschedule(after:tolerance:)` follows one tolerance rule whether the timer is pending or
    /// has just fired and is re-armed from its own callback (fixed delay): a value sets the
    /// tolerance, `nil` keeps it. Each case re-arms on the 100 ms tick grid, so a timer filed
    /// in the wheel fires at the tick 10 ms rounds up to, and a coalesced one at the last tick
    /// of its window.
    @Test(arguments: Rearm.all)
    func aReArmFromTheTimersOwnCallbackHonoursTheToleranceAsAPendingOneDoes(_ rearm: Rearm) throws {
        // Fired path: the timer fires (on the tick grid) and re-arms itself from its callback.
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(100))
        let fired = LockedValue<[MonotonicInstant]>([])
        let box = LockedValue<TimerHandle?>(nil)
        let results = LockedValue<[TimerReschedule]>([])
        let handle = try rearm.start.schedule(on: timers, after: .milliseconds(100)) {
            let first = fired.withLock { fired in
                fired.append(scheduler.now)
                return fired.count == 1
            }
            guard first, let handle = box.withLock({ $0 }) else { return }
            results.withLock { $0.append(handle.reschedule(after: .milliseconds(10), tolerance: rearm.tolerance)) }
        }
        box.withLock { $0 = handle }
        scheduler.advance(by: .seconds(5))
        box.withLock { $0 = nil }
        #expect(results.withLock { $0 } == [.movedToNewDeadline])
        let times = fired.withLock { $0 }
        try #require(times.count == 2, "fired at \(times)")
        #expect(times[1] - times[0] == rearm.firesAfter, "re-armed from its callback")

        // Pending path: the same re-arm, on the same grid, while the timer waits.
        let pendingScheduler = VirtualScheduler()
        let pendingTimers = TimerService(scheduler: pendingScheduler, tick: .milliseconds(100))
        let firedPending = LockedValue<[MonotonicInstant]>([])
        let pending = try rearm.start.schedule(on: pendingTimers, after: .seconds(30)) {
            firedPending.withLock { $0.append(pendingScheduler.now) }
        }
        pendingScheduler.advance(by: .milliseconds(100))
        let rearmedAt = pendingScheduler.now
        #expect(pending.reschedule(after: .milliseconds(10), tolerance: rearm.tolerance) == .movedToNewDeadline)
        pendingScheduler.advance(by: .seconds(5))
        #expect(firedPending.withLock { $0 } == [rearmedAt + rearm.firesAfter], "re-armed while pending")
    }
}
