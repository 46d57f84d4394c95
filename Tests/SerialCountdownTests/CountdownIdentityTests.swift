import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// Keyed by receiver identity: replace, never duplicate; a reused address is a new receiver.
@Suite struct CountdownIdentityTests {
    @Test func registeringTheSameReceiverAgainReplacesHandlerAndDuration() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        #expect(fixture.register(receiver, for: .seconds(3), label: "old") == .started)
        fixture.tick(1)
        #expect(fixture.register(receiver, for: .seconds(5), label: "new") == .replaced)
        #expect(fixture.manager.count == 1)
        fixture.tick(8)
        // The old handler got its one tick before the replacement, then (issue 12) one
        // `.replaced` call with the time it had left, and nothing after.
        #expect(fixture.log.seconds(of: "old") == [2, 2])
        #expect(fixture.log.calls(of: "old").map(\.tick.end) == [nil, .replaced])
        #expect(fixture.log.seconds(of: "new") == [4, 3, 2, 1, 0])
        #expect(fixture.log.terminals(of: "new").count == 1)
        withExtendedLifetime(receiver) {}
    }

    @Test func replacingManyTimesBeforeATickLeavesOneCountdown() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        for round in 0..<50 {
            fixture.register(receiver, for: .seconds(2), label: "round\(round)")
        }
        #expect(fixture.manager.count == 1)
        fixture.tick(3)
        // Every replaced handler got its one `.replaced` call (issue 12); only the last ticks.
        let ticking = fixture.log.all.filter { $0.tick.end != .replaced }
        #expect(ticking.map(\.name) == ["round49", "round49"])
        #expect(fixture.log.all.filter { $0.tick.end == .replaced }.map(\.name) == (0..<49).map { "round\($0)" })
        withExtendedLifetime(receiver) {}
    }

    @Test func aNewObjectAtAReleasedReceiversAddressIsNotTakenForIt() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let (newcomer, byMalloc) = fixture.newcomerAtAReleasedReceiversAddress(oldLabel: "old")
        #expect(
            !fixture.manager.contains(newcomer),
            "the released receiver's countdown was taken for the new object (reuse by malloc: \(byMalloc))")
        #expect(fixture.manager.remaining(for: newcomer) == nil)
        // The stale entry is still in the table: registering must start afresh, not replace.
        #expect(fixture.register(newcomer, for: .seconds(2), label: "new") == .started)
        fixture.tick(4)
        #expect(fixture.log.calls(of: "old").isEmpty)
        #expect(fixture.log.seconds(of: "new") == [1, 0])
        withExtendedLifetime(newcomer) {}
    }

    @Test func cancellingANewObjectAtAReleasedReceiversAddressCancelsNothing() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let (newcomer, byMalloc) = fixture.newcomerAtAReleasedReceiversAddress(oldLabel: "old")
        #expect(
            !fixture.manager.cancel(newcomer),
            "cancel took the released receiver's countdown (reuse by malloc: \(byMalloc))")
        fixture.scheduler.runUntilIdle()
        fixture.tick(4)
        #expect(fixture.log.all.isEmpty)
        withExtendedLifetime(newcomer) {}
    }
}
