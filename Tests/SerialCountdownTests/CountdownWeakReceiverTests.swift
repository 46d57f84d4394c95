import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// The receiver is held weakly: no call once it is gone, and its entry is purged.
@Suite struct CountdownWeakReceiverTests {
    @Test func managerDoesNotKeepTheReceiverAlive() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        var receiver: Receiver? = Receiver("a")
        weak let observer = receiver
        fixture.register(receiver!, for: .seconds(5))
        receiver = nil
        #expect(observer == nil)
    }

    @Test func releasedReceiverGetsNoFurtherCallAndIsPurgedAtTheNextTick() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        var a: Receiver? = Receiver("a")
        let b = Receiver("b")
        fixture.register(a!, for: .seconds(5))
        fixture.register(b, for: .seconds(5))
        fixture.tick(2)
        a = nil
        #expect(fixture.manager._slotCount == 2)  // not purged until the next tick looks
        fixture.tick(5)
        #expect(fixture.log.seconds(of: "a") == [4, 3])
        #expect(fixture.log.terminals(of: "a").isEmpty)
        #expect(fixture.log.seconds(of: "b") == [4, 3, 2, 1, 0])
        #expect(fixture.manager._slotCount == 0)
        withExtendedLifetime(a) {}
    }

    @Test func purgingAReleasedReceiverReleasesItsHandler() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        final class Captured: Sendable {}
        var captured: Captured? = Captured()
        weak let capturedObserver = captured
        var receiver: Receiver? = Receiver("a")
        fixture.manager.register(receiver!, for: .seconds(5)) { [captured] _, _, _ in _ = captured }
        captured = nil
        #expect(capturedObserver != nil)  // the handler holds it
        receiver = nil
        fixture.tick(1)
        #expect(capturedObserver == nil)
        #expect(fixture.scheduler.pendingCount == 0)
        #expect(fixture.manager._isTickerIdle)
        withExtendedLifetime(receiver) {}
    }

    @Test func receiverReleasedInsideItsOwnCallbackGetsNoFurtherCall() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let holder = LockedValue<Receiver?>(Receiver("a"))
        let calls = LockedValue(0)
        fixture.manager.register(holder.withLock { $0! }, for: .seconds(5)) { _, _, _ in
            calls.withLock { $0 += 1 }
            holder.withLock { $0 = nil }  // the tick still holds it for this call
        }
        fixture.tick(5)
        #expect(calls.withLock { $0 } == 1)
        #expect(fixture.manager.count == 0)
        #expect(fixture.scheduler.pendingCount == 0)
    }
}
