import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// Durations at the ends of the range saturate where they meet the clock, never wrap.
@Suite struct CountdownDurationTests {
    @Test(arguments: [.seconds(-1e10), .nanoseconds(Int64.min), .seconds(Int64.min), .seconds(-1)] as [Duration])
    func aHugelyNegativeDurationFinishesOnTheNextTick(duration: Duration) {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: duration)
        #expect(fixture.manager.remaining(for: receiver) == .zero)
        fixture.tick(2)
        #expect(fixture.log.calls(of: "a").map(\.tick) == [CountdownTick(remaining: .zero, end: .finished)])
        #expect(fixture.manager.count == 0)
        withExtendedLifetime(receiver) {}
    }

    @Test(arguments: [.seconds(Int64.max), .nanoseconds(Int64.max), .seconds(1e12)] as [Duration])
    func aHugelyPositiveDurationKeepsRunningWithoutWrapping(duration: Duration) {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: duration)
        fixture.tick(3)
        let calls = fixture.log.calls(of: "a")
        #expect(calls.count == 3)
        #expect(calls.allSatisfy { !$0.tick.isFinal && $0.tick.remaining > .seconds(9_000_000_000) })
        #expect(fixture.manager.contains(receiver))
        withExtendedLifetime(receiver) {}
    }

    @Test func aHugeIntervalSchedulesItsTickAtTheEndOfTimeInsteadOfWrapping() {
        let fixture = CountdownFixture(interval: .seconds(Int64.max))
        defer { fixture.manager.cancelAll() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(5))
        #expect(fixture.scheduler.nextDeadline.map { $0 > .start(plus: 1e9) } == true)
        fixture.tick(10)
        #expect(fixture.log.all.isEmpty)
        withExtendedLifetime(receiver) {}
    }
}
