import SerialCore
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

// Attack on issue 30's fixes: the credential refresh's context when its first parked request has
// none. In `WorkContextTests` (serialized: the propagator is process-wide).
extension WorkContextTests {
    /// A's request (trace tA) takes the shared lease; B's request has no trace at all. A's refresh
    /// fails and releases the lease: B's grant arrives inline, on the thread that released, in tA.
    /// B's refresh must run in the context of the first request parked for it, which is none,
    /// not in A's trace.
    @Test func aRefreshWhoseFirstParkedRequestHasNoContextDoesNotRunInAnotherQueuesContext() {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let seen = Seen()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(10))
        let a = Self.sharingQueue("A", seen: seen, scheduler: scheduler, coordinator: coordinator) { _, done in
            _ = try? scheduler.schedule(after: .milliseconds(5), WorkContext.bind { done(.failure(Denied())) })
        }
        let b = Self.sharingQueue("B", seen: seen, scheduler: scheduler, coordinator: coordinator) { expired, done in
            done(.success(expired + 1))
        }
        Self.$trace.withValue("tA") { a.submit(1) { _ in seen.record("completion1") } }
        b.submit(2) { _ in seen.record("completion2") }
        scheduler.advance(by: .seconds(1))
        let values = seen.recorder.values
        #expect(values.filter { $0.hasPrefix("refresh") } == ["refreshA:tA", "refreshB:none"], "\(values)")
        #expect(values.filter { $0.hasPrefix("completion") }.sorted() == ["completion1:tA", "completion2:none"])
    }

    /// As above with B on a `SerialQueue` of its own: the grant arrives on A's (virtual) thread in
    /// tA and B hops to its queue with `execute`, which carries the caller's context: B's
    /// refresh must still not run in tA.
    @Test func aRefreshWithNoParkedContextGrantedFromAnotherQueuesThreadHopsWithoutItsContext() throws {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let bQueue = SerialQueue(label: "attack-b")
        let seen = Seen()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(10))
        let a = Self.sharingQueue("A", seen: seen, scheduler: scheduler, coordinator: coordinator) { _, done in
            _ = try? scheduler.schedule(after: .milliseconds(5), WorkContext.bind { done(.failure(Denied())) })
        }
        let policy = RequestQueue<TracedTransport>.Policy(
            classify: { _, outcome in (try? outcome.get()) == 401 ? .credentialExpired : .success },
            refresh: { expired, done in
                seen.record("refreshB")
                done(.success(expired + 1))
            })
        let b = RequestQueue(
            transport: TracedTransport(seen: seen), credential: 0, policy: policy, coordinator: coordinator,
            scheduler: bQueue)
        Self.$trace.withValue("tA") { a.submit(1) { _ in seen.record("completion1") } }
        scheduler.runUntilIdle()  // A holds the lease now; its refresh fails at +5 ms
        b.submit(2) { _ in seen.record("completion2") }
        // B's request parks on its own queue; wait until it asked for the lease (it is held by A).
        _ = bQueue.sync { 0 }
        #expect(eventually(timeout: .seconds(20)) { seen.recorder.values.contains { $0.hasPrefix("send2") } })
        _ = bQueue.sync { 0 }
        scheduler.advance(by: .seconds(1))
        _ = try seen.recorder.wait(until: "B's refresh and completion", timeout: .seconds(20)) { values in
            values.contains { $0.hasPrefix("completion2") }
        }
        let values = seen.recorder.values
        #expect(values.filter { $0.hasPrefix("refresh") } == ["refreshA:tA", "refreshB:none"], "\(values)")
        withExtendedLifetime((a, b)) {}
    }
}

/// Attack on the watchdog's look racing `stopWatching` (issue 30, item 7): a queue watched
/// again during the look, and a second watchdog on the same queue, stay armed.
@Suite("Attack: StallWatchdog looks")
struct StallWatchdogAttackTests {
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
