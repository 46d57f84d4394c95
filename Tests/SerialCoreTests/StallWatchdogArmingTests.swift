import SerialCore
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// A watched idle queue is armed for every watchdog that watches it, and for no other: a look
/// racing `stopWatching` (a queue watched again during the look, a second watchdog on the same
/// queue) leaves it armed as the watching says.
@Suite("StallWatchdog arming")
struct StallWatchdogArmingTests {
    /// Holds the first look that copied a queue at `.willSample`, runs `during` there, lets it
    /// go and waits for its end. Returns a failure message, or nil.
    static func holdingALook(
        of watchdog: StallWatchdog, begin: @escaping @Sendable () -> Void, _ during: @escaping @Sendable () -> Void
    ) async -> String? {
        let sampling = TestSemaphore()
        let proceed = TestSemaphore()
        let ended = TestSemaphore()
        let held = TestFlag()
        return await offThePool { () -> String? in
            watchdog._setLookHook { phase in
                switch phase {
                case .willSample(let queues):
                    guard queues > 0, !held.isSet else { return }
                    held.set()
                    sampling.signal()
                    _ = proceed.wait(timeout: .seconds(30))
                case .ended:
                    if held.isSet { ended.signal() }
                }
            }
            begin()  // after the hook is in place: the look it causes is held
            guard sampling.wait(timeout: .seconds(20)) else { return "the watchdog never looked at a queue" }
            during()
            proceed.signal()
            guard ended.wait(timeout: .seconds(20)) else { return "the held look never ended" }
            watchdog._setLookHook(nil)
            return nil
        }
    }

    /// A queue watched while a look of an empty set is under way: that look copied the set
    /// before it, and must not end in sleep before a look has sampled (and so armed) the new
    /// queue. Before the fix the watchdog slept for good with the idle queue unarmed (seen once
    /// in an AddressSanitizer pass as the test below timing out; here on purpose, every time).
    @Test(arguments: QueueMode.allCases)
    func aQueueWatchedDuringALookOfAnEmptySetIsArmed(mode: QueueMode) async {
        let queue = mode.queue(label: "late-watch-\(mode)")
        let inLook = TestSemaphore()
        let proceed = TestSemaphore()
        let held = TestFlag()
        // The hook must be in place before the watchdog's first look: a look of the empty set
        // before it ends in sleep for good. On a loaded machine the first interval (1 ms) may
        // pass before the hook is set: then this watchdog is dropped and another one made.
        var made: StallWatchdog? = nil
        for _ in 0..<20 where made == nil {
            let candidate = StallWatchdog(runningThreshold: .seconds(60), checkInterval: .milliseconds(1)) { _ in }
            candidate._setLookHook { phase in
                guard case .willSample(let queues) = phase, queues == 0, !held.isSet else { return }
                held.set()
                inLook.signal()
                _ = proceed.wait(timeout: .seconds(30))
            }
            if candidate._lookCount == 0 { made = candidate } else { candidate.stop() }
        }
        guard let watchdog = made else {
            Issue.record("20 watchdogs in a row looked before their hook was set")
            return
        }
        defer { watchdog.stop() }
        let looking = await offThePool { inLook.wait(timeout: .seconds(20)) }
        #expect(looking, "the watchdog never looked")
        watchdog.watch(queue)  // during the held look of no queue
        proceed.signal()
        #expect(
            await eventually(timeout: .seconds(20)) { queue._isArmed(for: watchdog) },
            "a queue watched during a look was never armed: the watchdog went to sleep without it")
        watchdog._setLookHook(nil)
    }

    @Test(arguments: QueueMode.allCases)
    func aQueueUnwatchedAndWatchedAgainDuringALookStaysArmed(mode: QueueMode) async {
        let watchdog = StallWatchdog(runningThreshold: .seconds(60), checkInterval: .milliseconds(1)) { _ in }
        defer { watchdog.stop() }
        let queue = mode.queue(label: "rewatch-\(mode)")
        let failure = await Self.holdingALook(of: watchdog, begin: { watchdog.watch(queue) }) {
            watchdog.stopWatching(queue)
            watchdog.watch(queue)
        }
        #expect(failure == nil, "\(failure ?? "")")
        // Idle and watched: armed, by that look or (at the latest) the next one before it sleeps.
        #expect(await eventually(timeout: .seconds(20)) { queue._isArmed(for: watchdog) },
            "a watched idle queue is not armed for its watchdog")
        #expect(await eventually(timeout: .seconds(20)) { watchdog._isAsleep })
        #expect(queue._isArmed(for: watchdog), "the watchdog sleeps while its idle queue is not armed to wake it")
    }

    @Test(arguments: QueueMode.allCases)
    func aSecondWatchdogStaysArmedWhenTheFirstStopsWatchingDuringItsLook(mode: QueueMode) async {
        let first = StallWatchdog(runningThreshold: .seconds(60), checkInterval: .milliseconds(1)) { _ in }
        let second = StallWatchdog(runningThreshold: .seconds(60), checkInterval: .milliseconds(1)) { _ in }
        defer {
            first.stop()
            second.stop()
        }
        let queue = mode.queue(label: "two-dogs-\(mode)")
        second.watch(queue)
        #expect(await eventually(timeout: .seconds(20)) { second._isAsleep && queue._isArmed(for: second) })
        let failure = await Self.holdingALook(of: first, begin: { first.watch(queue) }) { first.stopWatching(queue) }
        #expect(failure == nil, "\(failure ?? "")")
        #expect(!queue._isArmed(for: first), "armed for a watchdog that stopped watching it")
        #expect(queue._isArmed(for: second), "the look of one watchdog disarmed another")
        #expect(second._isAsleep)
    }
}
