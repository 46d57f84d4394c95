import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// Repeating timers on virtual time: fixed rate without drift, missed periods skipped and
/// counted (never a burst), cancel from the callback.
@Suite("TimerService repeating")
struct TimerRepeatingTests {
    /// Fire times, as nanoseconds after a start instant.
    final class Times: Sendable {
        let list = LockedValue<[Int64]>([])
        func record(_ now: MonotonicInstant, from start: MonotonicInstant) {
            self.list.withLock { $0.append(Int64((now - start).saturatingNanoseconds)) }
        }
        var all: [Int64] { self.list.withLock { $0 } }
    }

    /// Periods that are not a multiple of the tick: period k fires in the tick of
    /// `first + k × period`, never earlier, never a tick later, from the first thousand to
    /// the millionth and beyond (one wake-up made 997,000 periods late jumps there): every
    /// deadline comes from the first one, nothing accumulates.
    @Test func aMillionPeriodsDoNotDrift() throws {
        let scheduler = InstrumentedScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .microseconds(100))
        let start = scheduler.now
        let period: Int64 = 1_000_037  // ns: 1 ms and a bit, 0.037 % off the tick grid
        let tick: Int64 = 100_000
        let wrong = TestCounter()
        let fires = LockedValue<[Int64]>([])
        let handle = try timers.schedule(every: .nanoseconds(period), startingAt: start + .nanoseconds(period)) {
            fires.withLock { $0.append((scheduler.now - start).saturatingNanoseconds) }
        }
        scheduler.base.advance(by: .nanoseconds(period * 1_000))
        scheduler.delayNextWakeUp(by: .nanoseconds(period * 997_000))
        scheduler.base.advance(by: .nanoseconds(period * 1_000))  // arms the late wake-up, fires nothing
        let end: Int64 = period * 1_001_000
        scheduler.base.advance(to: start + .nanoseconds(end))
        let times = fires.withLock { $0 }
        var checked = 0
        for time in times {
            let k = time / period  // the period this firing belongs to (it is at most a tick late)
            let lateness = time - k * period
            if k > 1_000 && k < 998_000 { continue }  // the late firing itself: off-grid by design
            checked += 1
            if lateness < 0 || lateness >= tick { wrong.increment() }
        }
        #expect(times.count > 3_000, "\(times.count) firings")
        #expect(checked >= 3_000)
        #expect(times.last.map { $0 / period } ?? 0 >= 1_000_000, "reached the millionth period")
        #expect(wrong.value == 0, "\(wrong.value) periods fired outside their deadline's tick")
        #expect(handle.skippedPeriods > 990_000)
        #expect(handle.cancel())
    }

    /// A wake-up that runs 35 ms late fires once, skips the three periods it missed, and the
    /// timer goes on at its original grid.
    @Test func missedPeriodsAreSkippedAndCountedNeverBurst() throws {
        let scheduler = InstrumentedScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(1))
        let start = scheduler.now
        let times = Times()
        scheduler.delayNextWakeUp(by: .milliseconds(35))
        let handle = try timers.schedule(every: .milliseconds(10)) { times.record(scheduler.now, from: start) }
        scheduler.base.advance(by: .milliseconds(75))
        #expect(times.all == [45_000_000, 50_000_000, 60_000_000, 70_000_000])
        #expect(handle.skippedPeriods == 3)
        #expect(handle.firedPeriods == 4)
        #expect(handle.status == .pending)
    }

    @Test func cancellingFromInsideItsOwnCallbackStopsIt() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = TestCounter()
        let box = LockedValue<TimerHandle?>(nil)
        let handle = try timers.schedule(every: .milliseconds(10)) {
            if fired.increment() == 3 { #expect(box.withLock { $0 }!.cancel()) }
        }
        box.withLock { $0 = handle }
        scheduler.advance(by: .seconds(1))
        #expect(fired.value == 3)
        #expect(handle.status == .cancelled)
        #expect(timers.pendingCount == 0)
        #expect(scheduler.pendingCount == 0, "no wake-up left armed for it")
    }

    /// Cancelled while due in the backlog (another callback of the same turn cancels it):
    /// the due period does not run either.
    @Test func cancellingWhileDueStopsItBeforeItRuns() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, callbacksPerTurn: 1)
        let fired = TestCounter()
        let box = LockedValue<TimerHandle?>(nil)
        try timers.schedule(after: .milliseconds(10)) { #expect(box.withLock { $0 }!.cancel()) }
        let handle = try timers.schedule(every: .milliseconds(10)) { fired.increment() }
        box.withLock { $0 = handle }
        scheduler.advance(by: .seconds(1))
        #expect(fired.value == 0)
        #expect(handle.status == .cancelled)
    }

    @Test func aRepeatingTimerEndsWithTheSchedulersShutdown() throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let timers = TimerService(scheduler: scheduler)
        let handle = try timers.schedule(every: .milliseconds(10)) {}
        scheduler.advance(by: .milliseconds(25))
        scheduler.shutdown()
        #expect(handle.status == .schedulerShutDown(.shutDown(scheduler: "virtual")))
        #expect(handle.firedPeriods == 2)
    }
}
