import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// TimerService when its scheduler stops for good: every pending timer ends
/// `.schedulerShutDown` once, unrun, and later calls throw the typed error; nothing traps.
@Suite("TimerService scheduler shutdown")
struct TimerServiceShutdownTests {
    static let reason = SchedulingError.shutDown(scheduler: "virtual")

    @Test(arguments: [ShutdownMode.drain, .cancelPending])
    func pendingTimersEndWithTheReasonThroughTheHandler(mode: ShutdownMode) throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let timers = TimerService(scheduler: scheduler)
        let fired = TestCounter()
        let handles = try (1...5).map { seconds in
            try timers.schedule(after: .seconds(Int64(seconds))) { fired.increment() }
        }
        scheduler.advance(by: .seconds(1))
        #expect(handles[0].status == .fired)
        scheduler.shutdown(mode)
        #expect(handles.dropFirst().allSatisfy { $0.status == .schedulerShutDown(Self.reason) })
        #expect(fired.value == 1)
        #expect(timers.pendingCount == 0)
        #expect(timers.isStopped)
        #expect(handles[1].cancel() == false)
        #expect(throws: TimerServiceError.schedulerShutDown(Self.reason)) {
            try timers.schedule(after: .seconds(1)) { fired.increment() }
        }
    }

    /// The measured bug: on a shut-down SerialQueue, a timer needing a new wake-up trapped in
    /// asyncAfter; a later one was accepted and never fired, and the earlier one was lost.
    @Test func onAShutDownSerialQueueNewTimersThrowAndThePendingOneEndsWithTheReason() throws {
        let queue = SerialQueue(label: "timers-shut")
        let timers = TimerService(scheduler: queue)
        let pending = try timers.schedule(after: .seconds(60)) {}
        queue.shutdown()
        let reason = SchedulingError.shutDown(scheduler: "timers-shut")
        #expect(pending.status == .schedulerShutDown(reason))
        #expect(throws: TimerServiceError.schedulerShutDown(reason)) {
            try timers.schedule(after: .seconds(1)) {}  // would need an earlier wake-up
        }
        #expect(throws: TimerServiceError.schedulerShutDown(reason)) {
            try timers.schedule(after: .seconds(120)) {}  // later than the armed one
        }
        #expect(timers.pendingCount == 0)
    }

    /// Found through a refused wake-up before the handler ran: the call throws, and every
    /// pending timer (the new one too) ends with the reason, once.
    @Test func aRefusedWakeUpStopsTheServiceOnTheCallersThread() throws {
        let scheduler = RefusingScheduler(label: "virtual")
        let timers = TimerService(scheduler: scheduler)
        let later = try timers.schedule(after: .seconds(10)) {}
        scheduler.refuse()
        // A later timer needs no wake-up: accepted, ended by the discovery below.
        let latest = try timers.schedule(after: .seconds(20)) {}
        #expect(throws: TimerServiceError.schedulerShutDown(Self.reason)) {
            try timers.schedule(after: .seconds(1)) {}
        }
        #expect(later.status == .schedulerShutDown(Self.reason))
        #expect(latest.status == .schedulerShutDown(Self.reason))
        #expect(timers.pendingCount == 0)
        scheduler.base.shutdown()  // the handler comes later and changes nothing
        #expect(later.status == .schedulerShutDown(Self.reason))
    }

    /// A refused follow-up turn: the due timers left in the backlog end with the reason.
    @Test func aRefusedFollowUpEndsTheDueTimersLeft() throws {
        let scheduler = RefusingScheduler(label: "virtual")
        let timers = TimerService(scheduler: scheduler, callbacksPerTurn: 1)
        let fired = TestCounter()
        let handles = try (0..<3).map { _ in
            try timers.schedule(after: .seconds(1)) {
                scheduler.refuse()  // refused while the turn posts its follow-up
                fired.increment()
            }
        }
        scheduler.base.advance(by: .seconds(1))
        // Turn 1 posted its follow-up before its callback refused; turn 2's post is refused.
        #expect(fired.value == 2)
        #expect(handles.map(\.status) == [.fired, .fired, .schedulerShutDown(Self.reason)])
        #expect(timers.pendingCount == 0)
    }

    @Test func aStoppedServiceKeepsItsStatusesWhenTheSchedulerShutsDownLater() throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let timers = TimerService(scheduler: scheduler)
        let handle = try timers.schedule(after: .seconds(1)) {}
        #expect(timers.stop() == 1)
        scheduler.shutdown()
        #expect(handle.status == .stopped)
        #expect(throws: TimerServiceError.stopped) { try timers.schedule(after: .seconds(1)) {} }
    }

    @Test func aServiceCreatedOnAShutDownSchedulerRefusesWithTheReason() {
        let scheduler = VirtualScheduler(label: "virtual")
        scheduler.shutdown()
        let timers = TimerService(scheduler: scheduler)
        #expect(timers.isStopped)
        #expect(throws: TimerServiceError.schedulerShutDown(Self.reason)) { try timers.schedule(after: .seconds(1)) {} }
    }

    @Test func statusTellsFiredAndCancelled() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let a = try timers.schedule(after: .seconds(1)) {}
        let b = try timers.schedule(after: .seconds(1)) {}
        #expect(a.status == .pending)
        #expect(b.cancel())
        scheduler.advance(by: .seconds(1))
        #expect(a.status == .fired)
        #expect(b.status == .cancelled)
    }

    /// Durations saturate where they meet the clock: no trap, no wrap-around.
    @Test func hugeDurationsSaturate() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = TestCounter()
        let never = try timers.schedule(after: .seconds(Int64.max)) { fired.increment() }
        #expect(never.deadline > scheduler.now + .seconds(86_400 * 365 * 290), "saturated, not wrapped")
        let past = try timers.schedule(after: .seconds(Int64.min)) { fired.increment() }
        scheduler.advance(by: .milliseconds(1))
        #expect(past.status == .fired)
        scheduler.advance(by: .seconds(86_400 * 365))
        #expect(never.status == .pending)
        #expect(fired.value == 1)
        #expect(never.cancel())
    }
}
