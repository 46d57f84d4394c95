import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// Promise (`withWheelDeadline`'s docs): a caller cancelled before the deadline gets
/// `CancellationError` (or what the operation throws); one cancelled once the deadline had
/// passed gets `WheelDeadlineExceeded`: "the moment of that cancellation counts".
@Suite("withWheelDeadline: the moment of the caller's cancellation")
struct WheelDeadlineCancellationMomentTests {
    typealias Outcome = WheelDeadlineTests.Outcome

    /// The caller is cancelled at +0 s, before a deadline at +1 s, and reaches the call only at
    /// +2 s (it waited on something that ignores cancellation). It was cancelled before the
    /// deadline; the cancellation handler, run at the call, sees +2 s instead.
    @Test func aCallerCancelledBeforeTheDeadlineButCallingAfterItGetsCancellationError() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let deadline = clock.now + .seconds(1)
        let gate = LockedValue<CheckedContinuation<Void, Never>?>(nil)
        let outcome = Outcome {
            // Something before the call that does not end at cancellation.
            await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
            return try await withWheelDeadline(at: deadline, clock: clock) {
                try await clock.sleep(for: .seconds(60))
                return 1
            }
        }
        #expect(await eventually(timeout: .seconds(120)) { gate.withLock { $0 != nil } }, "the caller never waited")
        outcome.task.cancel()  // at +0 s: before the deadline
        scheduler.advance(by: .seconds(2))  // the call starts only now, its deadline passed
        gate.withLock { $0?.resume() }
        let value = try await outcome.value()
        #expect(value == "cancelled", "the caller's own cancellation (at +0 s, deadline +1 s) ended as \(value)")
    }

    /// Cancellation racing the deadline's timer on the real shared clock: whatever wins, the
    /// outcome agrees with the clock. `cancelled` only if the cancellation began before the
    /// deadline; `exceeded` only if the deadline had passed by the time `cancel()` returned.
    /// No timing assumption: either outcome passes when consistent with the two clock reads.
    @Test func cancellationRacingTheTimerGivesAnOutcomeConsistentWithTheClock() async throws {
        let clock = WheelClock()
        var seen: [String: Int] = [:]
        for round in 0..<200 {
            let deadline = clock.now + .microseconds(500 + (round % 7) * 300)
            let started = TestSemaphore()
            let task = Task {
                try await withWheelDeadline(at: deadline, tolerance: .zero, clock: clock) {
                    started.signal()
                    try await clock.sleep(for: .seconds(60))
                    return 1
                }
            }
            #expect(await Task.detached { started.wait(timeout: .seconds(60)) }.value, "round \(round): never started")
            // Spin until near the deadline (a few hundred µs), then cancel.
            let target = deadline.advanced(by: .microseconds((round % 5) * 200 - 400))
            while clock.now < target { await Task.yield() }
            let before = clock.now
            task.cancel()
            let after = clock.now
            let result: String
            do {
                _ = try await task.value
                result = "value"
            } catch let error as WheelDeadlineExceeded {
                result = "exceeded"
                #expect(error.deadline == deadline)
                #expect(after >= deadline, "round \(round): exceeded, but cancel() returned before the deadline")
            } catch is CancellationError {
                result = "cancelled"
                #expect(before < deadline, "round \(round): cancelled, but cancel() began after the deadline")
            }
            #expect(result != "value", "round \(round): the 60 s sleep returned")
            seen[result, default: 0] += 1
        }
        print("WheelDeadline race outcomes: \(seen)")
    }
}
