import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// Every trap of SerialPolling, run in a child process, matching the message.
@Suite("Poller traps")
struct PollerCrashTests {
    @Test func zeroIntervalTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Poller<Int>(
                policy: PollPolicy(interval: .zero), scheduler: VirtualScheduler(), isDone: { _ in true },
                changes: .equality, query: .completion { _, _ in })
        }.map { result in
            let text = result.standardErrorText
            #expect(text.contains("PollPolicy.interval = 0.0 seconds: must be greater than zero"))
        }
    }

    @Test func maximumDelayBelowMinimumTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let backoff = PollPolicy.Backoff(minimumDelay: .seconds(2), maximumDelay: .seconds(1))
            _ = Poller<Int>(
                policy: PollPolicy(interval: .seconds(1), backoff: backoff), scheduler: VirtualScheduler(),
                isDone: { _ in true }, changes: .equality, query: .completion { _, _ in })
        }.map { result in
            let text = result.standardErrorText
            #expect(text.contains("PollPolicy.backoff.maximumDelay = 1.0 seconds: must not be below backoff.minimumDelay"))
        }
    }

    @Test func zeroMaximumConsecutiveErrorsTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let backoff = PollPolicy.Backoff(maximumConsecutiveErrors: 0)
            _ = Poller<Int>(
                policy: PollPolicy(interval: .seconds(1), backoff: backoff), scheduler: VirtualScheduler(),
                isDone: { _ in true }, changes: .equality, query: .completion { _, _ in })
        }.map { result in
            let text = result.standardErrorText
            #expect(text.contains("PollPolicy.backoff.maximumConsecutiveErrors = 0: must be at least 1"))
        }
    }

    @Test func negativeMinimumDelayTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let backoff = PollPolicy.Backoff(minimumDelay: .zero - .seconds(1))
            _ = Poller<Int>(
                policy: PollPolicy(interval: .seconds(1), backoff: backoff), scheduler: VirtualScheduler(),
                isDone: { _ in true }, changes: .equality, query: .completion { _, _ in })
        }.map { result in
            let text = result.standardErrorText
            #expect(text.contains("PollPolicy.backoff.minimumDelay = -1.0 seconds: must not be negative"))
        }
    }

    @Test func zeroAttemptTimeoutTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Poller<Int>(
                policy: PollPolicy(interval: .seconds(1), attemptTimeout: .zero), scheduler: VirtualScheduler(),
                isDone: { _ in true }, changes: .equality, query: .completion { _, _ in })
        }.map { result in
            let text = result.standardErrorText
            #expect(text.contains("PollPolicy.attemptTimeout = 0.0 seconds: must be greater than zero, or nil for none"))
        }
    }

    @Test func zeroDeadlineTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Poller<Int>(
                policy: PollPolicy(interval: .seconds(1), deadline: .zero), scheduler: VirtualScheduler(),
                isDone: { _ in true }, changes: .equality, query: .completion { _, _ in })
        }.map { result in
            let text = result.standardErrorText
            #expect(text.contains("PollPolicy.deadline = 0.0 seconds: must be greater than zero, or nil for none"))
        }
    }

    @Test func startWhileRunningTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let poller = Poller<Int>(
                policy: PollPolicy(interval: .seconds(1)), scheduler: VirtualScheduler(), isDone: { _ in true },
                changes: .equality, query: .completion { _, _ in })
            poller.start()
            poller.start()
        }.map { result in
            let text = result.standardErrorText
            #expect(text.contains("Poller: start called while poll session 1 is still running"))
        }
    }

    @Test func iteratingUpdatesWhileRunningTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let poller = Poller<Int>(
                policy: PollPolicy(interval: .seconds(1)), scheduler: VirtualScheduler(), isDone: { _ in true },
                changes: .equality, query: .completion { _, _ in })
            poller.start()
            _ = poller.updates.makeAsyncIterator()
        }.map { result in
            let text = result.standardErrorText
            #expect(text.contains("cancel() it first, or start again after its outcome was delivered"))
        }
    }
}
