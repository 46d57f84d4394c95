import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// First-tick policy: a countdown joining a running ticker is called at the next shared tick
/// with its exact time left, and finishes on the first shared tick at or after its deadline.
@Suite struct CountdownFirstTickTests {
    @Test func countdownJoiningMidTickIsCalledAtTheNextSharedTick() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let early = Receiver("early")
        let late = Receiver("late")
        fixture.register(early, for: .seconds(10))
        fixture.scheduler.advance(by: .milliseconds(1_300))   // ticked once at +1; now +1.3
        fixture.register(late, for: .seconds(3))              // deadline +4.3
        fixture.scheduler.advance(by: .milliseconds(700))     // shared tick at +2
        #expect(fixture.log.calls(of: "late").map(\.tick.remaining) == [.milliseconds(2_300)])
        fixture.tick(3)                                       // +3, +4, +5
        let calls = fixture.log.calls(of: "late")
        #expect(calls.map(\.tick.remaining) == [.milliseconds(2_300), .milliseconds(1_300), .milliseconds(300), .zero])
        // Never early, at most one interval late: the deadline +4.3 is met by the tick at +5.
        #expect(calls.map(\.at) == [.start(plus: 2), .start(plus: 3), .start(plus: 4), .start(plus: 5)])
        #expect(calls.last?.tick.end == .finished)
        // Both were called by the same shared ticks.
        #expect(fixture.log.calls(of: "early").suffix(4).map(\.at) == calls.map(\.at))
        withExtendedLifetime((early, late)) {}
    }

    @Test func countdownJoiningJustBeforeATickIsCalledAtThatTick() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let early = Receiver("early")
        let late = Receiver("late")
        fixture.register(early, for: .seconds(10))
        fixture.scheduler.advance(by: .milliseconds(999))
        fixture.register(late, for: .seconds(2))
        fixture.scheduler.advance(by: .milliseconds(1))
        #expect(fixture.log.calls(of: "late").map(\.tick.remaining) == [.milliseconds(1_999)])
        withExtendedLifetime((early, late)) {}
    }

    @Test func countdownRegisteredDuringATickIsFirstCalledAtTheNextOne() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let host = Receiver("host")
        let guest = Receiver("guest")
        let manager = fixture.manager
        manager.register(host, for: .seconds(10)) { _, tick, _ in
            if tick.remaining == .seconds(9) {
                manager.register(guest, for: .seconds(3)) { _, tick, _ in
                    fixture.log.append(Call(name: "guest", tick: tick, at: fixture.scheduler.now))
                }
            }
        }
        fixture.tick(1)
        #expect(fixture.log.calls(of: "guest").isEmpty)
        fixture.tick(3)
        #expect(fixture.log.seconds(of: "guest") == [2, 1, 0])
        #expect(fixture.log.calls(of: "guest").first?.at == .start(plus: 2))
        withExtendedLifetime((host, guest)) {}
    }
}

/// Last-tick policy: a countdown finishes on the first tick with at most 1/64 interval left.
@Suite struct CountdownLastTickTests {
    @Test func countdownWithinASixtyFourthOfAnIntervalOfItsDeadlineFinishesOnThatTick() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let early = Receiver("early")
        let late = Receiver("late")
        fixture.register(early, for: .seconds(10))
        fixture.scheduler.advance(by: .milliseconds(1_015))   // just after the tick at +1
        fixture.register(late, for: .seconds(2))              // deadline +3.015
        fixture.tick(2)                                       // +2.015, +3.015: ticks at +2 and +3 ran
        #expect(fixture.log.calls(of: "late").map(\.tick) == [
            CountdownTick(remaining: .milliseconds(1_015)), CountdownTick(remaining: .zero, end: .finished),
        ])
        #expect(fixture.log.calls(of: "late").last?.at == .start(plus: 3))
        withExtendedLifetime((early, late)) {}
    }

    @Test func countdownFurtherThanASixtyFourthOfAnIntervalFromItsDeadlineWaitsForTheNextTick() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let early = Receiver("early")
        let late = Receiver("late")
        fixture.register(early, for: .seconds(10))
        fixture.scheduler.advance(by: .milliseconds(1_016))
        fixture.register(late, for: .seconds(2))              // deadline +3.016: 16 ms > 1/64 s left at +3
        fixture.tick(3)
        #expect(fixture.log.calls(of: "late").map(\.tick) == [
            CountdownTick(remaining: .milliseconds(1_016)), CountdownTick(remaining: .milliseconds(16)),
            CountdownTick(remaining: .zero, end: .finished),
        ])
        #expect(fixture.log.calls(of: "late").last?.at == .start(plus: 4))
        withExtendedLifetime((early, late)) {}
    }
}
