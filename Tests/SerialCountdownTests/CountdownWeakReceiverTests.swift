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

/// Weak within a tick too: a receiver is held only for its own call.
@Suite struct CountdownWeakWithinATickTests {
    @Test(arguments: [false, true])
    func aReceiverReleasedByAnEarlierHandlerOfTheSameTickGetsNoCall(final: Bool) {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let first = Receiver("first")
        let second = LockedValue<Receiver?>(Receiver("second"))
        weak let secondObserver = second.withLock { $0 }
        // Whichever handler runs first in the batch drops the other's last reference.
        let duration: Duration = final ? .seconds(1) : .seconds(5)
        fixture.manager.register(first, for: duration) { _, tick, _ in
            fixture.log.append(Call(name: "first", tick: tick, at: fixture.scheduler.now))
            second.withLock { $0 = nil }
        }
        fixture.manager.register(second.withLock { $0! }, for: duration) { receiver, tick, _ in
            fixture.log.append(Call(name: "second", tick: tick, at: fixture.scheduler.now))
        }
        fixture.tick(1)
        // The second receiver, if still registered, was called before the first dropped it.
        let calledBeforeRelease = fixture.log.all.first?.name == "second"
        #expect(secondObserver == nil)
        #expect(fixture.log.calls(of: "second").count == (calledBeforeRelease ? 1 : 0),
                "\(fixture.log.all.map { "\($0.name): \($0.tick)" })")
        fixture.tick(6)
        #expect(fixture.log.calls(of: "second").count == (calledBeforeRelease ? 1 : 0))
        withExtendedLifetime(first) {}
    }
}
