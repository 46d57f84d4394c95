import SerialCore
import SerialTestSupport
import SerialTesting
import Testing

/// `VirtualScheduler.clock`'s documented recipe, as a test written from its doc would use it.
@Suite("VirtualScheduler clock")
struct VirtualSchedulerClockTests {
    /// `waitUntilAsleep(1)` then `advance(by:)` must resume the sleeper every time: a sleeper
    /// counted as asleep before its timer is armed let the advance slip in between, and the
    /// timer, armed afterwards, waited for a later advance. The race is narrow (it failed
    /// anywhere from the first round to the 4,285th), so the recipe runs many times in a row.
    @Test func theDocumentedRecipeResumesTheSleeperAtItsDeadlineEveryTime() async throws {
        // Fewer under ThreadSanitizer: 10,000 rounds made this the pass's last test by 45 s
        // (107 s against 62 s); the debug pass runs them all.
        let rounds = Sanitizers.threadSanitizerIsActive ? 3_000 : 10_000
        for round in 0..<rounds {
            let scheduler = VirtualScheduler(label: "recipe")
            defer { _ = scheduler.shutdown() }  // ends a sleep left behind by a failed round
            let clock = scheduler.clock
            let start = clock.now
            let woke = CallbackRecorder<MonotonicInstant>("woke, round \(round) of \(rounds)")
            let task = Task {
                try await clock.sleep(for: .seconds(5))
                woke.record(clock.now)
            }
            defer { task.cancel() }
            try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
            scheduler.advance(by: .seconds(5))
            // Fails with a RecorderTimeout naming the round when the advance did not resume it.
            let when = try await woke.wait(forCount: 1, timeout: .seconds(120))
            try #require(when == [start + .seconds(5)], "round \(round)")
        }
    }
}
