import SerialCore
import SerialCountdown
import SerialTestSupport
import SerialTesting
import Testing

/// The scheduler stopping for good: every countdown ends with one `.shutDown` call carrying the
/// reason, later registrations are refused, nothing traps.
@Suite struct CountdownShutdownTests {
    static let reason = SchedulingError.shutDown(scheduler: "VirtualScheduler")

    @Test(arguments: [ShutdownMode.drain, .cancelPending])
    func everyPendingCountdownEndsOnceWithTheReason(mode: ShutdownMode) {
        let fixture = CountdownFixture()
        let receivers = (0..<5).map { Receiver("r\($0)") }
        for receiver in receivers { fixture.register(receiver, for: .seconds(10)) }
        fixture.tick(2)
        fixture.scheduler.advance(by: .milliseconds(500))
        fixture.scheduler.shutdown(mode)
        for receiver in receivers {
            #expect(fixture.log.calls(of: receiver.name).map(\.tick) == [
                CountdownTick(remaining: .seconds(9)), CountdownTick(remaining: .seconds(8)),
                CountdownTick(remaining: .milliseconds(7_500), end: .shutDown(Self.reason)),
            ])
        }
        #expect(fixture.manager.count == 0)
        #expect(fixture.manager._isTickerIdle)
        withExtendedLifetime(receivers) {}
    }

    @Test func aReleasedReceiverGetsNoShutdownCallAndIsCounted() {
        let fixture = CountdownFixture()
        var gone: Receiver? = Receiver("gone")
        let kept = Receiver("kept")
        fixture.register(gone!, for: .seconds(10))
        fixture.register(kept, for: .seconds(10))
        gone = nil
        fixture.scheduler.shutdown()
        #expect(fixture.log.calls(of: "gone").isEmpty)
        #expect(fixture.log.terminals(of: "kept").map(\.tick.end) == [.shutDown(Self.reason)])
        #expect(fixture.manager.releasedReceiverCount == 1)
        withExtendedLifetime((gone, kept)) {}
    }

    @Test func registeringAfterTheShutdownIsRefusedWithOneCallOnTheCallersThread() {
        let fixture = CountdownFixture()
        fixture.scheduler.shutdown()
        let receiver = Receiver("late")
        let thread = CurrentThreadID.value
        let calledOn = LockedValue<[UInt]>([])
        let outcome = fixture.manager.register(receiver, for: .seconds(3)) { _, tick, _ in
            fixture.log.append(Call(name: "late", tick: tick, at: fixture.scheduler.now))
            calledOn.withLock { $0.append(CurrentThreadID.value) }
        }
        #expect(outcome == .refused(Self.reason))
        #expect(fixture.log.calls(of: "late").map(\.tick) == [CountdownTick(remaining: .seconds(3), end: .shutDown(Self.reason))])
        #expect(calledOn.withLock { $0 } == [thread])
        // A second registration is refused the same way; nothing is kept.
        #expect(fixture.register(receiver, for: .seconds(1), label: "later") == .refused(Self.reason))
        #expect(fixture.log.terminals(of: "later").count == 1)
        #expect(fixture.manager.count == 0)
        withExtendedLifetime(receiver) {}
    }

    @Test(.timeLimit(.minutes(1)))
    func aSequenceStartedAfterTheShutdownEndsAtOnceWithTheReason() async {
        let fixture = CountdownFixture()
        fixture.scheduler.shutdown()
        var iterator = fixture.manager.countdown(from: .seconds(5)).makeAsyncIterator()
        #expect(await iterator.next() == CountdownTick(remaining: .seconds(5), end: .shutDown(Self.reason)))
        #expect(await iterator.next() == nil)
    }

    /// A `cancel` whose `.cancelled` call the scheduler refuses (it stopped, but has not told the
    /// manager yet): that call is made on the calling thread, and the other countdowns end with
    /// `.shutDown` — each exactly once, even when the manager's own shutdown handler runs after.
    @Test func aCancelRacingTheShutdownStillEndsEachCountdownOnce() {
        let fixture = CountdownFixture()
        let a = Receiver("a")
        let b = Receiver("b")
        let cancelled = LockedValue<Bool?>(nil)
        // Registered before the manager's subscription, so it runs first at the shutdown.
        let subscription = fixture.scheduler.whenShutDown { _ in
            cancelled.withLock { $0 = fixture.manager.cancel(a) }
        }
        fixture.register(a, for: .seconds(10))
        fixture.register(b, for: .seconds(10))
        fixture.tick(1)
        fixture.scheduler.shutdown()
        #expect(cancelled.withLock { $0 } == true)
        #expect(fixture.log.calls(of: "a").map(\.tick.end) == [nil, .cancelled])
        #expect(fixture.log.calls(of: "b").map(\.tick.end) == [nil, .shutDown(Self.reason)])
        #expect(fixture.manager.count == 0)
        subscription.cancel()
        withExtendedLifetime((a, b)) {}
    }

    /// `cancel` and a replacement handed their terminal calls to the scheduler, which dropped
    /// them (`.cancelPending`): the shutdown makes them instead, each once, before the others.
    @Test func terminalCallsTheSchedulerDroppedAreStillMadeOnce() {
        let fixture = CountdownFixture()
        let a = Receiver("a")
        let b = Receiver("b")
        fixture.register(a, for: .seconds(10))
        fixture.register(b, for: .seconds(10), label: "b-old")
        #expect(fixture.manager.cancel(a))
        #expect(fixture.register(b, for: .seconds(5), label: "b-new") == .replaced)
        fixture.scheduler.shutdown(.cancelPending)
        #expect(fixture.log.calls(of: "a").map(\.tick.end) == [.cancelled])
        #expect(fixture.log.calls(of: "b-old").map(\.tick.end) == [.replaced])
        #expect(fixture.log.calls(of: "b-new").map(\.tick.end) == [.shutDown(Self.reason)])
        fixture.scheduler.runUntilIdle()
        #expect(fixture.log.all.count == 3)
        withExtendedLifetime((a, b)) {}
    }

    /// The last countdown was cancelled (the ticker stopped) but its `.cancelled` call is still
    /// on the scheduler: the manager keeps listening for the shutdown until it is made.
    @Test func aPendingCancelledCallKeepsTheShutdownHandler() {
        let fixture = CountdownFixture()
        let a = Receiver("a")
        fixture.register(a, for: .seconds(10))
        #expect(fixture.manager.cancel(a))
        #expect(fixture.manager._isTickerIdle)
        fixture.scheduler.shutdown(.cancelPending)
        #expect(fixture.log.calls(of: "a").map(\.tick.end) == [.cancelled])
        withExtendedLifetime(a) {}
    }

    @Test func anIdleManagerHoldsNoShutdownHandlerOnItsQueue() {
        let scheduler = VirtualScheduler()
        weak var observer: CountdownManager?
        let receiver = Receiver("a")
        do {
            let manager = CountdownManager(interval: .seconds(1), queue: scheduler, clock: VirtualBootClock(following: scheduler))
            observer = manager
            manager.register(receiver, for: .seconds(2)) { _, _, _ in }
            #expect(observer != nil)
        }
        #expect(observer != nil)  // its countdown keeps it alive
        scheduler.advance(by: .seconds(4))
        #expect(observer == nil, "the ended countdowns' shutdown subscription still holds the manager")
        withExtendedLifetime(receiver) {}
    }

    @Test(.timeLimit(.minutes(1)))
    func onAQueueTheShutdownCallsAreTheWorkersLastAct() {
        let queue = SerialQueue(label: "cd.shutdown")
        let manager = CountdownManager(interval: .seconds(60), queue: queue)
        let receiver = Receiver("a")
        let seen = LockedValue<[(CountdownTick, Bool)]>([])
        manager.register(receiver, for: .seconds(600)) { _, tick, _ in
            seen.withLock { $0.append((tick, queue.isCurrent)) }
        }
        _ = queue.shutdown(.cancelPending)
        // shutdown() returns after the handlers ran: no wait needed.
        let calls = seen.withLock { $0 }
        #expect(calls.count == 1)
        #expect(calls.first?.0.end == .shutDown(.shutDown(scheduler: "cd.shutdown")))
        #expect(calls.first?.1 == true)
        withExtendedLifetime(receiver) {}
    }
}
