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
        // The old handler got its one tick before the replacement and nothing after.
        #expect(fixture.log.seconds(of: "old") == [2])
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
        #expect(fixture.log.all.map(\.name) == ["round49", "round49"])
        withExtendedLifetime(receiver) {}
    }

    @Test func aNewObjectAtAReleasedReceiversAddressIsNotTakenForIt() throws {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        // Allocate, register, release, allocate again until malloc hands back the same address
        // (glibc does so at once for a freed block of the same size).
        var reused: Receiver? = nil
        for attempt in 0..<1_000 {
            var old: Receiver? = Receiver("old\(attempt)")
            let oldIdentity = ObjectIdentifier(old!)
            fixture.register(old!, for: .seconds(3), label: "old")
            old = nil
            let candidate = Receiver("new")
            if ObjectIdentifier(candidate) == oldIdentity {
                reused = candidate
                break
            }
            _ = fixture.manager.cancel(candidate)  // keep the table small while trying
        }
        let newcomer = try #require(reused, "malloc never reused a freed receiver's address in 1,000 tries")
        #expect(!fixture.manager.contains(newcomer), "the released receiver's countdown was taken for the new object")
        #expect(fixture.manager.remaining(for: newcomer) == nil)
        // The stale slot is still in the table: registering must start afresh, not replace.
        #expect(fixture.register(newcomer, for: .seconds(2), label: "new") == .started)
        fixture.tick(4)
        #expect(fixture.log.calls(of: "old").isEmpty)
        #expect(fixture.log.seconds(of: "new") == [1, 0])
        withExtendedLifetime(newcomer) {}
    }

    @Test func cancellingANewObjectAtAReleasedReceiversAddressCancelsNothing() throws {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        var reused: Receiver? = nil
        for attempt in 0..<1_000 {
            var old: Receiver? = Receiver("old\(attempt)")
            let oldIdentity = ObjectIdentifier(old!)
            fixture.register(old!, for: .seconds(3), label: "old")
            old = nil
            let candidate = Receiver("new")
            if ObjectIdentifier(candidate) == oldIdentity {
                reused = candidate
                break
            }
        }
        let newcomer = try #require(reused, "malloc never reused a freed receiver's address in 1,000 tries")
        #expect(!fixture.manager.cancel(newcomer))
        fixture.scheduler.runUntilIdle()
        #expect(fixture.log.all.isEmpty)
        withExtendedLifetime(newcomer) {}
    }
}
