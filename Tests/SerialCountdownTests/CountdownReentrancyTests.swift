import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// Handlers run with no lock held: they may register, replace, stop, cancel — their own
/// countdown included — without deadlock.
@Suite struct CountdownReentrancyTests {
    @Test func handlerMayCancelItsOwnCountdown() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        let manager = fixture.manager
        manager.register(receiver, for: .seconds(10)) { receiver, tick, _ in
            fixture.log.append(Call(name: "a", tick: tick, at: fixture.scheduler.now))
            if tick.remaining == .seconds(8), tick.end == nil { #expect(manager.cancel(receiver)) }
        }
        fixture.tick(10)
        #expect(fixture.log.calls(of: "a").map(\.tick) == [
            CountdownTick(remaining: .seconds(9)), CountdownTick(remaining: .seconds(8)),
            CountdownTick(remaining: .seconds(8), end: .cancelled),
        ])
        #expect(fixture.scheduler.pendingCount == 0)
        withExtendedLifetime(receiver) {}
    }

    @Test func handlerMayReplaceItsOwnCountdown() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        let manager = fixture.manager
        manager.register(receiver, for: .seconds(3)) { receiver, tick, stop in
            fixture.log.append(Call(name: "first", tick: tick, at: fixture.scheduler.now))
            guard tick.end == nil else { return }  // its `.replaced` call
            let outcome = manager.register(receiver, for: .seconds(2)) { _, tick, _ in
                fixture.log.append(Call(name: "second", tick: tick, at: fixture.scheduler.now))
            }
            #expect(outcome == .replaced)
            stop = true  // must not end the replacement
        }
        fixture.tick(5)
        #expect(fixture.log.seconds(of: "first") == [2, 2])
        #expect(fixture.log.calls(of: "first").map(\.tick.end) == [nil, .replaced])
        #expect(fixture.log.seconds(of: "second") == [1, 0])
        withExtendedLifetime(receiver) {}
    }

    @Test func handlerMayCancelALaterCountdownOfTheSameBatch() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receivers = (0..<6).map { Receiver("r\($0)") }
        let manager = fixture.manager
        for receiver in receivers {
            manager.register(receiver, for: .seconds(5)) { me, tick, _ in
                fixture.log.append(Call(name: me.name, tick: tick, at: fixture.scheduler.now))
                // Whoever runs first in the batch cancels all the others.
                if tick.remaining == .seconds(4), tick.end == nil {
                    for other in receivers where other !== me { manager.cancel(other) }
                }
            }
        }
        fixture.tick(1)
        fixture.scheduler.runUntilIdle()
        let calls = fixture.log.all
        let ticks = calls.filter { !$0.tick.isFinal }
        let cancelled = calls.filter { $0.tick.end == .cancelled }
        // One tick call was made; the other five were cancelled before their turn.
        #expect(ticks.count == 1)
        #expect(cancelled.count == 5)
        #expect(Set(cancelled.map(\.name)).isDisjoint(with: ticks.map(\.name)))
        withExtendedLifetime(receivers) {}
    }

    @Test func handlerMayCancelEverythingAndStartAgain() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let a = Receiver("a")
        let b = Receiver("b")
        let manager = fixture.manager
        let restarted = LockedValue(false)
        fixture.register(b, for: .seconds(10))
        manager.register(a, for: .seconds(10)) { _, tick, _ in
            fixture.log.append(Call(name: "a", tick: tick, at: fixture.scheduler.now))
            guard !tick.isFinal, !restarted.withLock({ $0 }) else { return }
            restarted.withLock { $0 = true }
            #expect(manager.cancelAll() == 2)
            manager.register(a, for: .seconds(2)) { _, tick, _ in
                fixture.log.append(Call(name: "a2", tick: tick, at: fixture.scheduler.now))
            }
        }
        fixture.tick(4)
        #expect(fixture.log.seconds(of: "a2") == [1, 0])
        #expect(fixture.log.calls(of: "a").map(\.tick.end) == [nil, .cancelled])
        #expect(fixture.log.calls(of: "b").last?.tick.end == .cancelled)
        #expect(fixture.scheduler.pendingCount == 0)
        withExtendedLifetime((a, b)) {}
    }

    @Test func handlerMayReadTheManager() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        let manager = fixture.manager
        let seen = LockedValue<[Duration?]>([])
        manager.register(receiver, for: .seconds(3)) { receiver, _, _ in
            seen.withLock { $0.append(manager.remaining(for: receiver)) }
            _ = manager.count
            _ = manager.contains(receiver)
        }
        fixture.tick(3)
        // The final call comes after the countdown left the table.
        #expect(seen.withLock { $0 } == [.seconds(2), .seconds(1), nil])
        withExtendedLifetime(receiver) {}
    }
}
