import Glibc
import SerialCore
import SerialRequests
import SerialTesting
import SerialTestSupport
import Testing

/// Backoff arithmetic saturates instead of trapping, whatever the durations and the factor.
@Suite struct RetryBackoffTests {
    @Test func aMaximumAtTheEndOfTimeSaturatesInsteadOfTrapping() async {
        await #expect(processExitsWith: .success) {
            let backoff = RetryBackoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(Int64.max))
            for retry in 1...80 { _ = backoff.delay(beforeRetry: retry) }
            if backoff.delay(beforeRetry: 80) != .nanoseconds(Int64.max) { exit(1) }
        }
    }

    @Test func zeroTimesAnInfiniteFactorIsZero() async {
        await #expect(processExitsWith: .success) {
            let backoff = RetryBackoff(initial: .zero, multiplier: .infinity, maximum: .seconds(1))
            if backoff.delay(beforeRetry: 2) != .zero || backoff.delay(beforeRetry: 40) != .zero { exit(1) }
        }
    }

    @Test func delaysGrowThenStayAtTheMaximum() {
        let backoff = RetryBackoff(initial: .milliseconds(100), multiplier: 3, maximum: .seconds(1))
        #expect((1...5).map { backoff.delay(beforeRetry: $0) } == [
            .milliseconds(100), .milliseconds(300), .milliseconds(900), .seconds(1), .seconds(1),
        ])
    }

    /// A queue retrying under a backoff whose maximum is the end of time: the retries past the
    /// 34th wait "forever" rather than trap on the scheduler.
    @Test func aQueueRetryingWithAnEndlessMaximumDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let harness = Harness(
                TestQueue.Configuration(
                    maximumRetries: 40,
                    retryBackoff: RetryBackoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(Int64.max)),
                    agingInterval: nil))
            harness.submit("flaky", statuses: [503])
            for _ in 0..<45 { harness.advance(.seconds(Int64.max)) }
            if harness.recorder.completedCount > 1 { exit(2) }
        }
    }
}
