import SerialRuntime
import SerialTesting
import Testing

// The examples of the doc comments of WheelClock, withWheelDeadline and VirtualScheduler.clock,
// each a `// example:` region that scripts/check-readme-examples.sh compares with the comment.

@Suite("Doc examples: sleeping and deadlines on the wheel")
struct AsyncTimeDocExamples {
    @Test func wheelClock() async throws {
        // example: WheelClock
        let clock = WheelClock()                         // the process's shared timer service
        try await clock.sleep(for: .milliseconds(250))   // one wheel timer; no thread, no Dispatch
        // end example
    }

    @Test func wheelDeadline() async throws {
        let api = API()
        // example: withWheelDeadline
        let profile = try await withWheelDeadline(after: .seconds(2)) {
            try await api.fetchProfile()
        }
        // end example
        #expect(profile.status == 200)
    }

    @Test func virtualClock() async throws {
        // example: VirtualScheduler.clock
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let woke = CallbackRecorder<MonotonicInstant>("woke")
        let task = Task { try await clock.sleep(for: .seconds(5)); woke.record(clock.now) }
        try await scheduler.waitUntilAsleep(1)                  // no real sleeping
        scheduler.advance(by: .seconds(5))                      // resumes it, at start + 5 s
        let when = try await woke.wait(forCount: 1)
        // end example
        #expect(when == [scheduler.now])
        try await task.value
    }
}
