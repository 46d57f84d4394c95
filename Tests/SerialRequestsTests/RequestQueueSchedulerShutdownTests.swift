import SerialCore
import SerialRequests
import SerialTestSupport
import SerialTesting
import Testing

/// The scheduler stopping for good: every unfinished request ends once with
/// `RequestError.schedulerShutDown`, later submissions get the same typed error, nothing traps.
@Suite("RequestQueue: its scheduler shuts down")
struct RequestQueueSchedulerShutdownTests {
    static let reason = SchedulingError.shutDown(scheduler: "VirtualScheduler")

    @Test(arguments: [ShutdownMode.drain, .cancelPending])
    func everyUnfinishedRequestEndsOnceWithTheReason(mode: ShutdownMode) {
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 2, retryBackoff: RetryBackoff(initial: .seconds(5), maximum: .seconds(5)),
                agingInterval: nil))
        harness.submit("retrying", statuses: [503, 200], latency: .milliseconds(10))
        harness.advance(.milliseconds(10))  // now waiting out its backoff
        harness.submit("running", latency: .seconds(10))
        harness.submit("expiring", statuses: [401, 200], latency: .milliseconds(5))
        harness.advance(.milliseconds(5))  // parked behind a refresh
        harness.submit("queued", timeout: .seconds(60))
        let thread = CurrentThreadID.value
        let completedOn = LockedValue<Set<UInt>>([])
        harness.queue.submit(Call(name: "watched", latency: .seconds(10))) { _ in
            completedOn.withLock { _ = $0.insert(CurrentThreadID.value) }
        }
        #expect(harness.queue.unfinishedCount == 5)
        harness.scheduler.shutdown(mode)
        for tag in ["retrying", "running", "expiring", "queued"] {
            #expect(harness.recorder.only(tag)?.errorName == "schedulerShutDown", "\(tag): \(harness.recorder.results(tag))")
            #expect(harness.recorder.states(tag).last == .failure)
        }
        if case .failure(.schedulerShutDown(let reason)) = harness.recorder.only("queued") {
            #expect(reason == Self.reason)
        } else {
            Issue.record("queued: \(harness.recorder.results("queued"))")
        }
        #expect(completedOn.withLock { $0 } == [thread], "delivered on the thread that ran the shutdown")
        #expect(harness.queue.unfinishedCount == 0)
        #expect(harness.queue.runningCount == 0)
    }

    @Test func aRequestSubmittedAfterwardsEndsAtOnceWithTheTypedErrorOnTheCallersThread() {
        let harness = Harness()
        harness.scheduler.shutdown()
        let thread = CurrentThreadID.value
        let completedOn = LockedValue<[UInt]>([])
        let handle = harness.queue.submit(Call(name: "late")) { result in
            completedOn.withLock { $0.append(CurrentThreadID.value) }
            harness.recorder.completion("late")(result)
        }
        #expect(harness.recorder.only("late")?.errorName == "schedulerShutDown")
        #expect(completedOn.withLock { $0 } == [thread])
        #expect(handle.state == .failure)
        #expect(harness.server.sentNames.isEmpty)
        #expect(harness.queue.unfinishedCount == 0)
    }

    /// `shutdown()` decided every completion, but the scheduler dropped the work that was to
    /// deliver them: the scheduler's shutdown delivers them instead, each once.
    @Test func completionsDecidedBeforeTheSchedulerDroppedTheirDeliveryStillArrive() {
        let harness = Harness()
        harness.submit("a")
        harness.submit("b", latency: .seconds(5))
        harness.run()  // both sent
        #expect(harness.queue.shutdown() == 2)
        harness.scheduler.shutdown(.cancelPending)  // drops the drain that would deliver them
        #expect(harness.recorder.only("a")?.errorName == "shutDown")
        #expect(harness.recorder.only("b")?.errorName == "shutDown")
    }

    /// A call that meets the refusal before the queue's own shutdown handler ran (here: from a
    /// handler registered earlier): it ends everything at once; the handler then finds nothing.
    @Test func aSubmissionRacingTheShutdownEndsEveryRequestOnce() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler)
        let recorder = Recorder()
        let box = LockedValue<TestQueue?>(nil)
        let early = scheduler.whenShutDown { _ in
            box.withLock { $0 }?.submit(Call(name: "racer"), completion: recorder.completion("racer"))
        }
        let queue = TestQueue(
            transport: server, credential: 0, policy: server.policy(), configuration: .init(agingInterval: nil),
            scheduler: scheduler)
        box.withLock { $0 = queue }
        queue.submit(Call(name: "slow", latency: .seconds(10)), completion: recorder.completion("slow"))
        queue.submit(Call(name: "queued", statuses: [0]), priority: .low, completion: recorder.completion("queued"))
        scheduler.runUntilIdle()
        scheduler.shutdown(.cancelPending)
        for tag in ["racer", "slow", "queued"] {
            #expect(recorder.only(tag)?.errorName == "schedulerShutDown", "\(tag): \(recorder.results(tag))")
        }
        #expect(recorder.completedCount == 3)
        early.cancel()
        box.withLock { $0 = nil }
    }

    /// An answer arriving from another thread after the shutdown (its scheduler refuses it) is
    /// ignored: the request has already ended once.
    @Test func anAnswerArrivingAfterTheShutdownIsIgnored() {
        let scheduler = VirtualScheduler()
        let answers = LockedValue<[@Sendable () -> Void]>([])
        let server = SimulatedServer(scheduler: scheduler) { _, work in answers.withLock { $0.append(work) } }
        let recorder = Recorder()
        let queue = TestQueue(
            transport: server, credential: 0, policy: server.policy(), configuration: .init(agingInterval: nil),
            scheduler: scheduler)
        queue.submit(Call(name: "a"), completion: recorder.completion("a"))
        scheduler.runUntilIdle()  // sent; its answer is held
        scheduler.shutdown()
        for answer in answers.withLock({ $0 }) { answer() }  // the transport answers now
        #expect(recorder.only("a")?.errorName == "schedulerShutDown")
        #expect(queue.unfinishedCount == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func anAwaitedResponseReturnsWhenTheQueueShutsDown() async {
        let queue = SerialQueue(label: "rq.shutdown")
        let server = SimulatedServer(scheduler: queue)
        let requests = TestQueue(
            transport: server, credential: 0, policy: server.policy(), configuration: .init(agingInterval: nil),
            scheduler: queue)
        async let result = requests.response(for: Call(name: "never", statuses: [0]))
        while requests.runningCount == 0 { await Task.yield() }
        _ = queue.shutdown()
        let ended = await result
        #expect(ended.errorName == "schedulerShutDown")
    }

    @Test func aQueueStopsHoldingAShutdownHandlerWhenItIsReleased() {
        let scheduler = VirtualScheduler()
        weak var observer: TestQueue?
        do {
            let server = SimulatedServer(scheduler: scheduler)
            let queue = TestQueue(transport: server, credential: 0, policy: server.policy(), scheduler: scheduler)
            observer = queue
        }
        #expect(observer == nil)
        scheduler.shutdown()  // its withdrawn handler is not called
    }
}
