import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// The ticker runs only while countdowns exist, and starts again on the next registration.
@Suite struct CountdownTickerLifecycleTests {
    @Test func noWorkIsScheduledBeforeTheFirstRegistration() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        #expect(fixture.scheduler.pendingCount == 0)
        fixture.scheduler.advance(by: .seconds(3_600))
        #expect(fixture.scheduler.ranCount == 0)
    }

    @Test func oneTickIsArmedAtATimeWhileCountdownsExist() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receivers = (0..<20).map { Receiver("r\($0)") }
        for receiver in receivers { fixture.register(receiver, for: .seconds(4)) }
        #expect(fixture.scheduler.pendingCount == 1)
        fixture.tick(1)
        #expect(fixture.scheduler.pendingCount == 1)
        withExtendedLifetime(receivers) {}
    }

    @Test func tickerStopsWhenTheLastCountdownFinishes() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(3))
        fixture.tick(3)
        #expect(fixture.scheduler.pendingCount == 0)
        #expect(fixture.manager._isTickerIdle)
        let ran = fixture.scheduler.ranCount
        fixture.scheduler.advance(by: .seconds(3_600))
        #expect(fixture.scheduler.ranCount == ran)
        withExtendedLifetime(receiver) {}
    }

    @Test func tickerStopsAtOnceWhenTheLastCountdownIsCancelled() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(30))
        fixture.tick(1)
        fixture.manager.cancel(receiver)
        fixture.scheduler.runUntilIdle()  // the .cancelled call
        #expect(fixture.scheduler.pendingCount == 0)
        #expect(fixture.manager._isTickerIdle)
        withExtendedLifetime(receiver) {}
    }

    @Test func tickerStopsAtOnceWhenTheLastCountdownSetsTheStopFlag() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(30), stopWhen: { $0.remaining == .seconds(28) })
        fixture.tick(2)
        #expect(fixture.scheduler.pendingCount == 0)
        #expect(fixture.manager._isTickerIdle)
        withExtendedLifetime(receiver) {}
    }

    @Test func tickerRestartsOnTheNextRegistrationWithAFreshGrid() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let first = Receiver("first")
        fixture.register(first, for: .seconds(2))
        fixture.tick(2)
        #expect(fixture.scheduler.pendingCount == 0)
        fixture.scheduler.advance(by: .milliseconds(7_300))   // idle, at start + 9.3 s
        let second = Receiver("second")
        fixture.register(second, for: .seconds(3))
        #expect(fixture.scheduler.pendingCount == 1)
        #expect(fixture.scheduler.nextDeadline == .start(plus: 10.3))
        fixture.tick(3)
        #expect(fixture.log.seconds(of: "second") == [2, 1, 0])
        #expect(fixture.log.calls(of: "second").map(\.tick.missedTicks) == [0, 0, 0])
        #expect(fixture.scheduler.pendingCount == 0)
        withExtendedLifetime((first, second)) {}
    }

    @Test func registeringDuringTheLastTickKeepsTheTickerRunning() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let first = Receiver("first")
        let second = Receiver("second")
        let manager = fixture.manager
        manager.register(first, for: .seconds(2)) { _, tick, _ in
            fixture.log.append(Call(name: "first", tick: tick, at: fixture.scheduler.now))
            if tick.isFinal {
                manager.register(second, for: .seconds(2)) { _, tick, _ in
                    fixture.log.append(Call(name: "second", tick: tick, at: fixture.scheduler.now))
                }
            }
        }
        fixture.tick(5)
        #expect(fixture.log.seconds(of: "second") == [1, 0])
        #expect(fixture.log.calls(of: "second").map(\.at) == [.start(plus: 3), .start(plus: 4)])
        #expect(fixture.scheduler.pendingCount == 0)
        withExtendedLifetime((first, second)) {}
    }

    @Test func managerIsReleasedOnceItsCountdownsEnd() {
        let scheduler = VirtualScheduler()
        let receiver = Receiver("a")
        weak var observer: CountdownManager?
        do {
            let manager = CountdownManager(queue: scheduler, clock: VirtualBootClock(following: scheduler))
            observer = manager
            manager.register(receiver, for: .seconds(2)) { _, _, _ in }
        }
        #expect(observer != nil)  // the armed tick keeps it alive while a countdown runs
        scheduler.advance(by: .seconds(2))
        #expect(observer == nil)
        withExtendedLifetime(receiver) {}
    }
}
