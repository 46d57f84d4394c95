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
}
