import SerialCore
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Testing

/// `WorkContext`: a context captured where work is submitted is in place where it runs, at every
/// hop; work submitted without one runs without one. One suite, serialized: the propagator is
/// process-wide (other suites meanwhile capture nothing, their trace being unset).
@Suite("WorkContext", .serialized)
struct WorkContextTests {
    @TaskLocal static var trace: String?

    /// Records what `trace` was where each piece of work ran.
    final class Seen: Sendable {
        let recorder = CallbackRecorder<String>("seen")
        func record(_ place: String) { self.recorder.record("\(place):\(WorkContextTests.trace ?? "none")") }
    }

    static func installTrace() {
        WorkContext.install(WorkContext.Propagator(
            capture: { Self.trace },
            restore: { context, work in Self.$trace.withValue(context as? String) { work() } }))
    }

    @Test func asyncAndDelayedWorkRunWithTheirSubmittersContextAndNoOther() throws {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let queue = SerialQueue(label: "context")
        let seen = Seen()
        Self.$trace.withValue("t1") {
            queue.async { seen.record("async") }
        }
        queue.async { seen.record("plain") }  // submitted with none: must not inherit t1
        try Self.$trace.withValue("t2") {
            try queue.tryAsync { seen.record("tryAsync") }
            queue.asyncAfter(delay: .milliseconds(1)) { seen.record("asyncAfter") }
        }
        let values = try seen.recorder.wait(forCount: 4)
        #expect(values == ["async:t1", "plain:none", "tryAsync:t2", "asyncAfter:t2"])
    }

    @Test func timerCallbacksRunWithTheSchedulingContext() throws {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let seen = Seen()
        try Self.$trace.withValue("t8") {
            try timers.schedule(after: .milliseconds(5)) { seen.record("once") }
            try timers.schedule(every: .milliseconds(10)) { seen.record("every") }
        }
        try timers.schedule(after: .milliseconds(5)) { seen.record("plain") }
        scheduler.advance(by: .milliseconds(20))
        #expect(seen.recorder.values == ["once:t8", "plain:none", "every:t8", "every:t8"])
    }

    @Test func countdownHandlersRunWithTheRegisteringContext() throws {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let countdowns = CountdownManager(interval: .seconds(1), queue: scheduler)
        let seen = Seen()
        final class Receiver: Sendable {}
        let receiver = Receiver()
        Self.$trace.withValue("t3") {
            countdowns.register(receiver, for: .seconds(2)) { _, tick, _ in seen.record("tick\(tick.isFinal ? "-final" : "")") }
        }
        scheduler.advance(by: .seconds(1))
        countdowns.cancel(receiver)  // the ending call, made from a thread with no context
        scheduler.runUntilIdle()
        let values = seen.recorder.values
        #expect(values.last == "tick-final:t3")
        #expect(values.count >= 2 && values.allSatisfy { $0.hasSuffix(":t3") }, "\(values)")
        withExtendedLifetime(receiver) {}
    }

    @Test func pollQueriesAndCallbacksRunWithTheStartingContext() throws {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let seen = Seen()
        let poller = Poller<Int>(
            policy: PollPolicy(interval: .seconds(1)), scheduler: scheduler, isDone: { $0 >= 2 },
            changes: .equality,
            query: .completion { attempt, reply in
                seen.record("query")
                reply(.success(attempt.number))
            })
        Self.$trace.withValue("t4") {
            poller.start(onUpdate: { _ in seen.record("update") }, onOutcome: { _ in seen.record("outcome") })
        }
        scheduler.advance(by: .seconds(5))
        #expect(seen.recorder.values == ["query:t4", "update:t4", "query:t4", "update:t4", "outcome:t4"])
    }

    @Test func withNothingInstalledNothingIsCarried() throws {
        WorkContext.uninstall()
        let queue = SerialQueue(label: "no-context")
        let seen = Seen()
        Self.$trace.withValue("t5") {
            queue.async { seen.record("async") }
        }
        #expect(try seen.recorder.wait(forCount: 1) == ["async:none"])
        #expect(WorkContext.capture() == nil)
    }

    /// A transport that answers 401 to the first credential and 200 after, recording each send.
    struct TracedTransport: RequestTransport {
        let seen: Seen
        func send(_ request: Int, credential: Int, completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
            self.seen.record("send\(request)")
            completion(.success(credential == 0 ? 401 : 200))
        }
    }

    @Test func everyAttemptTheRefreshAndTheCompletionOfARequestRunWithItsSubmittersContext() throws {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let seen = Seen()
        let policy = RequestQueue<TracedTransport>.Policy(
            classify: { _, outcome in (try? outcome.get()) == 401 ? .credentialExpired : .success },
            refresh: { expired, done in
                seen.record("refresh")
                done(.success(expired + 1))
            })
        let requests = RequestQueue(
            transport: TracedTransport(seen: seen), credential: 0, policy: policy, scheduler: scheduler)
        Self.$trace.withValue("t6") {
            requests.submit(1) { _ in seen.record("completion1") }
        }
        Self.$trace.withValue("t7") {
            requests.submit(2, onStateChange: { state in if state == .success { seen.record("state2") } }) { _ in
                seen.record("completion2")
            }
        }
        scheduler.advance(by: .seconds(1))
        let values = seen.recorder.values
        // Both sent, both met the expired credential; one refresh (the first parked request's
        // context), both re-sent, each with its own context, then each completes with it.
        #expect(values.filter { $0.hasPrefix("send1") } == ["send1:t6", "send1:t6"], "\(values)")
        #expect(values.filter { $0.hasPrefix("send2") } == ["send2:t7", "send2:t7"], "\(values)")
        #expect(values.filter { $0.hasPrefix("refresh") } == ["refresh:t6"], "\(values)")
        #expect(values.filter { $0.hasPrefix("completion") || $0.hasPrefix("state") }.sorted()
            == ["completion1:t6", "completion2:t7", "state2:t7"], "\(values)")
    }

    @Test func runBodiesRunWithTheAwaitingTasksContext() async {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        for mode in QueueMode.allCases {
            let queue = mode.queue(label: "context-run-\(mode)")
            let inside = await Self.$trace.withValue("t9") { await queue.run { Self.trace } }
            #expect(inside == "t9", "\(mode)")
            #expect(await queue.run { Self.trace } == nil, "\(mode): a run without a context inherited one")
        }
    }

    // MARK: A refresh shared through a coordinator

    struct Denied: Error {}

    /// A queue on `scheduler` that shares `coordinator`, whose refreshes are recorded as
    /// `"refresh<name>"` and answered by `answer`.
    static func sharingQueue(
        _ name: String, seen: Seen, scheduler: VirtualScheduler, coordinator: LocalCredentialCoordinator<Int>,
        answer: @escaping @Sendable (Int, @escaping @Sendable (Result<Int, any Error>) -> Void) -> Void
    ) -> RequestQueue<TracedTransport> {
        let policy = RequestQueue<TracedTransport>.Policy(
            classify: { _, outcome in (try? outcome.get()) == 401 ? .credentialExpired : .success },
            refresh: { expired, done in
                seen.record("refresh\(name)")
                answer(expired, done)
            })
        return RequestQueue(
            transport: TracedTransport(seen: seen), credential: 0, policy: policy, coordinator: coordinator,
            scheduler: scheduler)
    }

    /// Two queues share a coordinator; A's request (trace tA) takes the lease, B's (trace tB)
    /// waits behind it. When A's refresh fails and releases the lease, B's grant arrives inline
    /// on the thread that released (in A's context): B's refresh must still run in tB.
    @Test func aRefreshGrantedByAnotherQueuesReleaseRunsInItsOwnParkedRequestsContext() {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let seen = Seen()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(10))
        // A's refresh endpoint answers later, on a callback that carries its caller's context.
        let a = Self.sharingQueue("A", seen: seen, scheduler: scheduler, coordinator: coordinator) { _, done in
            _ = try? scheduler.schedule(after: .milliseconds(5), WorkContext.bind { done(.failure(Denied())) })
        }
        let b = Self.sharingQueue("B", seen: seen, scheduler: scheduler, coordinator: coordinator) { expired, done in
            done(.success(expired + 1))
        }
        Self.$trace.withValue("tA") { a.submit(1) { _ in seen.record("completion1") } }
        Self.$trace.withValue("tB") { b.submit(2) { _ in seen.record("completion2") } }
        scheduler.advance(by: .seconds(1))
        let values = seen.recorder.values
        #expect(values.filter { $0.hasPrefix("refresh") } == ["refreshA:tA", "refreshB:tB"], "\(values)")
        #expect(values.filter { $0.hasPrefix("completion") }.sorted() == ["completion1:tA", "completion2:tB"])
    }

    /// As above, but A's refresh never answers: B gets the lease when A's expires, from the
    /// coordinator's expiry check (no request's context): B's refresh must still run in tB.
    @Test func aRefreshGrantedWhenAnotherQueuesLeaseExpiresRunsInItsOwnParkedRequestsContext() {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let seen = Seen()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(1))
        let a = Self.sharingQueue("A", seen: seen, scheduler: scheduler, coordinator: coordinator) { _, _ in }
        let b = Self.sharingQueue("B", seen: seen, scheduler: scheduler, coordinator: coordinator) { expired, done in
            done(.success(expired + 1))
        }
        Self.$trace.withValue("tA") { a.submit(1) { _ in } }
        Self.$trace.withValue("tB") { b.submit(2) { _ in seen.record("completion2") } }
        scheduler.advance(by: .seconds(2))
        let values = seen.recorder.values
        #expect(values.filter { $0.hasPrefix("refresh") } == ["refreshA:tA", "refreshB:tB"], "\(values)")
        #expect(values.filter { $0.hasPrefix("completion") } == ["completion2:tB"], "\(values)")
        withExtendedLifetime(a) {}
    }

    /// B's publish is refused (its lease expired and another holder took one): B asks again, and
    /// the lease it then gets arrives from that holder's release on the test's thread. The
    /// refresh made under it must run in B's request's context too.
    @Test func aRefreshAfterARefusedPublishRunsInItsParkedRequestsContext() {
        Self.installTrace()
        defer { WorkContext.uninstall() }
        let scheduler = VirtualScheduler()
        let seen = Seen()
        let coordinator = LocalCredentialCoordinator<Int>(scheduler: scheduler, leaseDuration: .seconds(1))
        // The refresh endpoint answers after 2 s, on a callback with no context.
        let b = Self.sharingQueue("B", seen: seen, scheduler: scheduler, coordinator: coordinator) { expired, done in
            _ = try? scheduler.schedule(after: .seconds(2)) { done(.success(expired + 1)) }
        }
        Self.$trace.withValue("tB") { b.submit(2) { _ in seen.record("completion2") } }
        scheduler.advance(by: .milliseconds(1500))  // B's lease expired at 1 s: another holder takes one
        let other = LockedValue<CredentialLease?>(nil)
        coordinator.acquire(replacing: 0) { grant in
            if case .success(.lease(let lease)) = grant { other.withLock { $0 = lease } }
        }
        let lease = other.withLock { $0 }
        #expect(lease != nil, "the other holder got no lease")
        scheduler.advance(by: .milliseconds(700))  // 2.2 s: B's publish was refused; it waits behind the lease
        if let lease { coordinator.release(lease) }
        scheduler.advance(by: .seconds(3))
        let values = seen.recorder.values
        #expect(values.filter { $0.hasPrefix("refresh") } == ["refreshB:tB", "refreshB:tB"], "\(values)")
        #expect(values.filter { $0.hasPrefix("completion") } == ["completion2:tB"], "\(values)")
    }
}

// A credential refresh runs in the context of the first request parked for it, even when that
// request has none (never in another queue's context).
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
