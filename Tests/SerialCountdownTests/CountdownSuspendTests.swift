import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// A suspend moves the boot clock but not the scheduler's: the first tick after it is right,
/// missed ticks are counted and skipped, never delivered in a burst.
@Suite struct CountdownSuspendTests {
    @Test func firstTickAfterASuspendShowsTheRightRemainingTimeAndMissedTicks() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(10))
        fixture.tick(2)                                   // 9, 8
        fixture.clock.simulateSuspend(for: .seconds(5))   // asleep 5 s between ticks
        fixture.tick(1)                                   // 10 - (3 + 5) = 2
        let calls = fixture.log.calls(of: "a")
        #expect(calls.map(\.tick.remaining) == [.seconds(9), .seconds(8), .seconds(2)])
        #expect(calls.map(\.tick.missedTicks) == [0, 0, 5])
        fixture.tick(3)
        #expect(fixture.log.seconds(of: "a") == [9, 8, 2, 1, 0])
        #expect(fixture.log.terminals(of: "a").count == 1)
        withExtendedLifetime(receiver) {}
    }

    @Test func suspendPastTheDeadlineFinishesOnTheFirstTickAfterIt() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(5))
        fixture.tick(1)
        fixture.clock.simulateSuspend(for: .seconds(60))
        fixture.tick(1)
        let calls = fixture.log.calls(of: "a")
        #expect(calls.map(\.tick) == [
            CountdownTick(remaining: .seconds(4)),
            CountdownTick(remaining: .zero, missedTicks: 60, end: .finished),
        ])
        #expect(fixture.scheduler.pendingCount == 0)
        withExtendedLifetime(receiver) {}
    }

    @Test func aSuspendOfAFractionalNumberOfTicksRealignsToTheGridWithoutABurst() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(10))
        fixture.tick(2)                                       // grid points 1, 2
        fixture.clock.simulateSuspend(for: .milliseconds(3_500))
        fixture.scheduler.advance(by: .seconds(1))            // boot is at 6.5: stands for point 7
        let afterResume = fixture.log.calls(of: "a").last
        #expect(afterResume?.tick == CountdownTick(remaining: .milliseconds(3_500), missedTicks: 4))
        // The next tick is grid point 8 on the boot clock: 1.5 s later on the scheduler, not at once.
        #expect(fixture.scheduler.nextDeadline == .start(plus: 4.5))
        fixture.scheduler.advance(by: .milliseconds(1_499))
        #expect(fixture.log.calls(of: "a").count == 3)
        fixture.scheduler.advance(by: .milliseconds(1))
        #expect(fixture.log.calls(of: "a").last?.tick == CountdownTick(remaining: .seconds(2)))
        fixture.tick(2)
        #expect(fixture.log.calls(of: "a").last?.tick == CountdownTick(remaining: .zero, end: .finished))
        withExtendedLifetime(receiver) {}
    }

    @Test func aSuspendShorterThanHalfAnIntervalMissesNothing() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(10))
        fixture.tick(1)
        fixture.clock.simulateSuspend(for: .milliseconds(400))
        fixture.tick(1)
        #expect(fixture.log.calls(of: "a").map(\.tick) == [
            CountdownTick(remaining: .seconds(9)), CountdownTick(remaining: .milliseconds(7_600)),
        ])
        withExtendedLifetime(receiver) {}
    }
}
