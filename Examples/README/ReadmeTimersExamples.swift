import SerialRuntime
import SerialTesting
import Synchronization
import Testing

// example: README fixed delay
final class Flusher: Sendable {
    let timer = Mutex<TimerHandle?>(nil)   // its own handle, for the callback

    func start(on timers: TimerService) throws {
        let handle = try timers.schedule(after: .seconds(1)) { [self] in
            flush()                                                          // however long it takes,
            _ = self.timer.withLock { $0 }?.reschedule(after: .seconds(1))   // the next run is 1 s after it
        }
        self.timer.withLock { $0 = handle }
    }
}
// end example

@Suite("README examples: heartbeats and idle timeouts")
struct ReadmeTimersExamples {
    @Test func heartbeatsAndIdleTimeouts() throws {
        let queue = SerialQueue(label: "connections")
        let timers = TimerService(scheduler: queue)
        // example: README heartbeats
        let idle = try timers.schedule(after: .seconds(30)) { close(connection) }
        idle.reschedule(after: .seconds(30))         // on every packet: in place, O(1), no allocation
        let beat = try timers.schedule(every: .seconds(5)) { sendHeartbeat() }
        beat.cancel()                                // also from inside its own callback
        // end example
        #expect(idle.cancel())
        timers.stop()
    }

    @Test func sleepingAndDeadlines() async throws {
        let queue = SerialQueue(label: "timers")
        let timers = TimerService(scheduler: queue)
        let api = API()
        // example: README sleeping and deadlines
        let clock = WheelClock(timers: timers)               // a Swift Clock on the wheel
        try await clock.sleep(for: .milliseconds(20))         // one timer; cancelling the task frees it at once
        let profile = try await withWheelDeadline(after: .seconds(2), clock: clock) {
            try await api.fetchProfile()                       // cancelled if the deadline passes first:
        }                                                      // then this throws WheelDeadlineExceeded
        // end example
        #expect(profile.status == 200)
        timers.stop()
    }

    @Test func aToleranceSaysHowLateATimerMayRun() throws {
        let queue = SerialQueue(label: "tolerance")
        let timers = TimerService(scheduler: queue)
        // example: README tolerance
        let frame = try timers.schedule(every: .microseconds(16_667), tolerance: .zero) { flush() }  // on the deadline
        let idle = try timers.schedule(after: .seconds(30), tolerance: .seconds(1)) { close(connection) }   // may share a wake-up
        // end example
        #expect(idle.cancel())
        #expect(frame.cancel())
        timers.stop()
    }

    @Test func fixedDelayReArmsFromTheCallback() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        let flusher = Flusher()
        try flusher.start(on: timers)
        scheduler.advance(by: .milliseconds(3_500))
        let handle = try #require(flusher.timer.withLock { $0 })
        #expect(handle.status == .pending && handle.deadline == start + .seconds(4), "ran at 1, 2 and 3 s")
        #expect(handle.cancel())
    }
}
