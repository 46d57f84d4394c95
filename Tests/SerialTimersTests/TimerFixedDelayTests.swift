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
}
