import SerialCore
import Testing

@testable import SerialPostgres

/// The wake-up a waiter behind a lease relies on: a NOTIFY that arrives after the waiter read the
/// row but before it started waiting must still end its wait (CI once saw such a release missed,
/// and the waiter slept its whole 60 s backoff).
@Suite("A publish signal")
struct PublishSignalTests {
    @Test func aSignalBetweenTheReadAndTheWaitEndsTheWaitAtOnce() async {
        let signal = PublishSignal()
        let seen = signal.epoch  // the waiter is about to read the row
        signal.signal()  // the NOTIFY arrives before it waits
        // Correct code returns at once, without looking at the clock; the bound only ends a broken one.
        let signalled = await signal.wait(since: seen, upTo: .seconds(10))
        #expect(signalled, "a signal that came before the wait was lost: the waiter slept its backoff")
    }

    @Test func aSignalDuringTheWaitEndsIt() async {
        let signal = PublishSignal()
        let seen = signal.epoch
        let waiting = Task { await signal.wait(since: seen, upTo: .seconds(600)) }
        signal.signal()  // before or after the waiter registered: either way it must see it
        #expect(await waiting.value, "the wait ran out instead of ending at the signal")
    }

    /// A caller cancelled while it waits (its request cancelled, or the queue's refresh timeout)
    /// returns at once, not at the end of its backoff; a signal racing the cancel changes nothing.
    @Test(.timeLimit(.minutes(2))) func aCancelledWaitEndsAtOnce() async {
        let signal = PublishSignal()
        for round in 0..<200 {
            let seen = signal.epoch
            let waiting = Task { await signal.wait(since: seen, upTo: .seconds(600)) }
            if round % 2 == 0 { signal.signal() }
            waiting.cancel()
            // A lost cancellation would hold this for 600 s: the time limit fails the test first.
            _ = await waiting.value
        }
        let seen = signal.epoch
        #expect(await signal.wait(since: seen, upTo: .milliseconds(1)) == false, "a cancelled wait left a signal behind")
    }

    @Test func aWaitWithoutASignalEndsAtItsTimeout() async {
        let signal = PublishSignal()
        signal.signal()  // signals before the epoch was read do not count
        #expect(await signal.wait(since: signal.epoch, upTo: .milliseconds(20)) == false)
    }

    /// A cancellation that reaches a wait after a signal resumed it (its task not yet run again)
    /// leaves nothing behind: over a long-lived coordinator every such race would otherwise keep
    /// one entry forever. The waiting task prefers a queue that this test holds with a `sync`
    /// body, so the signal and the cancellation both happen before it can run again.
    @Test(.timeLimit(.minutes(2))) func aCancellationAfterTheSignalLeavesNothingBehind() async {
        let signal = PublishSignal()
        let queue = SerialQueue(label: "late-cancel")
        let seen = signal.epoch
        let waiting = Task(executorPreference: queue) { await signal.wait(since: seen, upTo: .seconds(600)) }
        let patience = ContinuousClock.now + .seconds(60)
        var registered = signal.trackedWaitCount == 1
        while !registered && ContinuousClock.now < patience {
            try? await Task.sleep(for: .milliseconds(1))
            registered = signal.trackedWaitCount == 1
        }
        #expect(registered, "the wait never registered")
        queue.sync {
            signal.signal()  // resumes the wait; its task runs on `queue`, held here
            waiting.cancel()  // so the cancellation comes after the resume, before it runs
        }
        #expect(await waiting.value, "the wait missed the signal")
        #expect(signal.trackedWaitCount == 0, "a late cancellation left \(signal.trackedWaitCount) entries behind")
    }
}
