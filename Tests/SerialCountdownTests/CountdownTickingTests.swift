import SerialCore
import SerialCountdown
import SerialTesting
import Testing

@Suite struct CountdownTickingTests {
    @Test func countdownOfFiveIntervalsTicksFourTimesThenFinishesOnTheFifth() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        #expect(fixture.register(receiver, for: .seconds(5)) == .started)
        fixture.tick(7)
        #expect(fixture.log.seconds(of: "a") == [4, 3, 2, 1, 0])
        let calls = fixture.log.calls(of: "a")
        #expect(calls.map(\.tick.end) == [nil, nil, nil, nil, .finished])
        #expect(calls.map(\.at) == (1...5).map { MonotonicInstant.start(plus: Double($0)) })
        #expect(calls.allSatisfy { $0.tick.missedTicks == 0 })
        withExtendedLifetime(receiver) {}
    }

    @Test func everyCountdownTicksInTheSameBatch() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receivers = (0..<10).map { Receiver("r\($0)") }
        for (index, receiver) in receivers.enumerated() {
            fixture.register(receiver, for: .seconds(3 + index))
        }
        let ranBefore = fixture.scheduler.ranCount
        fixture.tick(1)
        // One scheduled work delivered all ten calls, all at the same instant.
        #expect(fixture.scheduler.ranCount == ranBefore + 1)
        let calls = fixture.log.all
        #expect(calls.count == 10)
        #expect(Set(calls.map(\.at)) == [MonotonicInstant.start(plus: 1)])
        #expect(Set(calls.map(\.name)) == Set(receivers.map(\.name)))
        withExtendedLifetime(receivers) {}
    }

    @Test func ticksStayOnTheirGridWithoutDrift() {
        let fixture = CountdownFixture(interval: .milliseconds(333))
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(1_000))
        for step in 1...300 {
            #expect(fixture.scheduler.nextDeadline == .start(plus: 0).advanced(by: .milliseconds(333) * step))
            fixture.scheduler.advance(by: .milliseconds(333))
        }
        #expect(fixture.log.calls(of: "a").count == 300)
        withExtendedLifetime(receiver) {}
    }

    @Test func remainingComesFromTheDeadlineNotFromACounter() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .milliseconds(4_500))
        fixture.tick(2)
        #expect(fixture.manager.remaining(for: receiver) == .milliseconds(2_500))
        fixture.scheduler.advance(by: .milliseconds(400))
        #expect(fixture.manager.remaining(for: receiver) == .milliseconds(2_100))
        #expect(fixture.log.calls(of: "a").map(\.tick.remaining) == [.milliseconds(3_500), .milliseconds(2_500)])
        withExtendedLifetime(receiver) {}
    }

    @Test(arguments: [Duration.zero, .seconds(-3)])
    func nonPositiveDurationFinishesOnTheNextTick(duration: Duration) {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: duration)
        fixture.tick(3)
        let calls = fixture.log.calls(of: "a")
        #expect(calls.map(\.tick) == [CountdownTick(remaining: .zero, end: .finished)])
        #expect(calls.first?.at == .start(plus: 1))
        withExtendedLifetime(receiver) {}
    }

    @Test func managerAnswersCountContainsAndRemaining() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let a = Receiver("a")
        let b = Receiver("b")
        #expect(fixture.manager.count == 0)
        #expect(!fixture.manager.contains(a))
        #expect(fixture.manager.remaining(for: a) == nil)
        fixture.register(a, for: .seconds(3))
        #expect(fixture.manager.count == 1)
        #expect(fixture.manager.contains(a))
        #expect(!fixture.manager.contains(b))
        #expect(fixture.manager.remaining(for: a) == .seconds(3))
        #expect(fixture.manager.interval == .seconds(1))
        withExtendedLifetime((a, b)) {}
    }
}
