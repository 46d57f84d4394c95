import SerialRuntime
import Testing

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
}
