import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// A callback is released after the service's lock is: whatever its captures do when they go
/// (here, ask the service something) cannot deadlock the service. Cancel, stop and fire each
/// release callbacks; each path is checked.
@Suite("TimerService releases callbacks outside its lock")
struct TimerCallbackReleaseTests {
    /// Asks the service for its pending count when released: that takes the service's lock.
    final class AsksOnRelease: Sendable {
        let timers: TimerService
        let asked: TestCounter

        init(_ timers: TimerService, _ asked: TestCounter) {
            self.timers = timers
            self.asked = asked
        }

        deinit {
            _ = self.timers.pendingCount
            self.asked.increment()
        }
    }

    @Test func aCancelledCallbackIsReleasedAfterTheLock() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let asked = TestCounter()
        let handle = try Self.schedule(timers, asked)
        withWatchdog(timeout: .seconds(30), "cancel released its callback under the service's lock") {
            #expect(handle.cancel())
        }
        #expect(asked.value == 1)
    }

    @Test func callbacksDroppedByStopAreReleasedAfterTheLock() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let asked = TestCounter()
        for _ in 0..<3 { _ = try Self.schedule(timers, asked) }
        withWatchdog(timeout: .seconds(30), "stop released callbacks under the service's lock") {
            #expect(timers.stop() == 3)
        }
        #expect(asked.value == 3)
    }

    @Test func aFiredCallbackIsReleasedAfterTheLock() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let asked = TestCounter()
        _ = try Self.schedule(timers, asked)
        withWatchdog(timeout: .seconds(30), "a turn released a fired callback under the service's lock") {
            scheduler.advance(by: .seconds(2))
        }
        #expect(asked.value == 1)
    }

    /// A timer 1 s out whose callback alone holds an `AsksOnRelease`.
    static func schedule(_ timers: TimerService, _ asked: TestCounter) throws -> TimerHandle {
        let capture = AsksOnRelease(timers, asked)
        return try timers.schedule(after: .seconds(1)) { _ = capture }
    }
}
