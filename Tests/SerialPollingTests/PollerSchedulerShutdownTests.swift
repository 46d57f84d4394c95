import SerialCore
import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// The scheduler stopping for good: the running session ends with its one outcome,
/// `schedulerShutDown(reason)` (its own case, not a `failed` error); later sessions end the same
/// way at once.
@Suite("Poller: its scheduler shuts down")
struct PollerSchedulerShutdownTests {
    static let reason = SchedulingError.shutDown(scheduler: "VirtualScheduler")

    @Test(arguments: [ShutdownMode.drain, .cancelPending])
    func aSessionWaitingForItsNextQueryEndsOnceWithTheReason(mode: ShutdownMode) {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(10), .value(20)])
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.advance(by: .milliseconds(500))  // first answer in; waiting for the next query
        #expect(poller.isRunning)
        scheduler.shutdown(mode)
        #expect(recorder.updates == [10])
        #expect(recorder.outcomes.map(\.schedulerShutDownReason) == [Self.reason])
        #expect(recorder.outcomeIsLast)
        #expect(!poller.isRunning)
        #expect(scheduler.pendingCount == 0)
    }

    @Test(arguments: [ShutdownMode.drain, .cancelPending])
    func aSessionWithAQueryInFlightEndsOnceWithTheReason(mode: ShutdownMode) {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(10, after: .seconds(30))])
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()  // the query is in flight
        scheduler.shutdown(mode)
        #expect(recorder.outcomes.map(\.schedulerShutDownReason) == [Self.reason])
        #expect(recorder.offSchedulerDeliveries == 1, "delivered on the thread that ran the shutdown")
    }

    @Test func startingAfterTheShutdownEndsTheSessionAtOnceOnTheCallersThread() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(10)])
        let poller = makePoller(server)
        scheduler.shutdown()
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        let thread = CurrentThreadID.value
        let calledOn = LockedValue<[UInt]>([])
        poller.start(onOutcome: { outcome in
            calledOn.withLock { $0.append(CurrentThreadID.value) }
            recorder.outcome(outcome)
        })
        #expect(recorder.outcomes.map(\.schedulerShutDownReason) == [Self.reason])
        #expect(calledOn.withLock { $0 } == [thread])
        #expect(!poller.isRunning)
        #expect(server.queryCount == 0)
        // And again: every later session ends the same way.
        recorder.start(poller)
        #expect(recorder.outcomes.count == 2)
    }

    /// `cancel()` decided the outcome, but the scheduler dropped the work that was to deliver it:
    /// the scheduler's shutdown delivers it instead, once.
    @Test func anOutcomeWhoseDeliveryTheSchedulerDroppedIsStillDelivered() {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [.value(10, after: .seconds(30))])
        let poller = makePoller(server)
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()
        #expect(poller.cancel())
        scheduler.shutdown(.cancelPending)  // drops the delivery work
        #expect(recorder.outcomes.map(\.kind) == ["cancelled"])
    }

    /// A reply arriving from another thread after the shutdown changes nothing: the session has
    /// its one outcome.
    @Test func aReplyArrivingAfterTheShutdownIsIgnored() {
        let scheduler = VirtualScheduler()
        let replies = ReplyBox()
        let poller = Poller<Int>(
            policy: testPolicy(), scheduler: scheduler, isDone: { $0 >= 100 }, changes: .equality,
            query: .completion { attempt, reply in replies.keep(attempt, reply) })
        let recorder = PollRecorder<Int>(scheduler: scheduler)
        recorder.start(poller)
        scheduler.runUntilIdle()
        scheduler.shutdown()
        replies.reply(session: 1, attempt: 1, .success(100))
        #expect(recorder.outcomes.map(\.schedulerShutDownReason) == [Self.reason])
        #expect(recorder.updates.isEmpty)
        #expect(poller._droppedResponses == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func updatesThrowTheSchedulerShutDownError() async throws {
        let queue = SerialQueue(label: "poll.shutdown")
        let poller = Poller<Int>(
            policy: testPolicy(intervalMilliseconds: 60_000), scheduler: queue, isDone: { $0 >= 100 },
            changes: .equality, query: .completion { _, reply in reply(.success(1)) })
        var iterator = poller.updates.makeAsyncIterator()
        #expect(try await iterator.next() == 1)
        _ = queue.shutdown()
        do {
            _ = try await iterator.next()
            Issue.record("the sequence did not throw")
        } catch let error as PollError {
            #expect(error == .schedulerShutDown(.shutDown(scheduler: "poll.shutdown")))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// Only the armed timer held the poller: the queue drops it when it shuts down, and the
    /// session still gets its outcome (from the worker, as its last act).
    @Test func aReleasedPollerWhoseQueueShutsDownStillDeliversItsOutcome() {
        let queue = SerialQueue(label: "poll.released")
        let outcomes = LockedValue<[String]>([])
        do {
            let poller = Poller<Int>(
                policy: testPolicy(intervalMilliseconds: 60_000), scheduler: queue, isDone: { $0 >= 100 },
                changes: .equality, query: .completion { _, reply in reply(.success(1)) })
            poller.start(onOutcome: { outcome in
                outcomes.withLock { $0.append("\(outcome.kind) on queue: \(queue.isCurrent)") }
            })
            queue.sync {}  // the first query ran; the next one's timer is armed
        }
        _ = queue.shutdown(.cancelPending)
        #expect(outcomes.withLock { $0 } == ["schedulerShutDown on queue: true"])
    }

    @Test func anIdlePollerHoldsNothingOnItsScheduler() {
        let scheduler = VirtualScheduler()
        weak var observer: Poller<Int>?
        do {
            let server = SimulatedServer(scheduler: scheduler, answers: [.value(100)])
            let poller = makePoller(server)
            observer = poller
            poller.start()
            scheduler.runUntilIdle()
        }
        #expect(observer == nil)
    }
}
