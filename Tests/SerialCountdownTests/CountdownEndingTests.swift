import SerialCore
import SerialCountdown
import SerialTesting
import Testing

/// Stop flag, cancel, cancelAll, and exactly one terminal call.
@Suite struct CountdownEndingTests {
    @Test func settingTheStopFlagEndsTheCountdownAtOnce() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        let stillRunningAfterStop = LockedValue<Bool?>(nil)
        let manager = fixture.manager
        manager.register(receiver, for: .seconds(10)) { receiver, tick, stop in
            fixture.log.append(Call(name: "a", tick: tick, at: fixture.scheduler.now))
            if tick.remaining == .seconds(7) { stop = true }
        }
        try! fixture.scheduler.schedule(at: .start(plus: 3.5)) {
            stillRunningAfterStop.withLock { $0 = manager.contains(receiver) }
        }
        fixture.tick(12)
        // Decided in issue 12: the stop flag's call is followed by one `.stopped` call.
        #expect(fixture.log.seconds(of: "a") == [9, 8, 7, 7])
        #expect(fixture.log.calls(of: "a").map(\.tick.end) == [nil, nil, nil, .stopped])
        #expect(stillRunningAfterStop.withLock { $0 } == false)
        #expect(fixture.scheduler.pendingCount == 0)
        withExtendedLifetime(receiver) {}
    }

    @Test func cancelEndsTheCountdownWithOneCancelledCall() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(10))
        fixture.tick(2)
        fixture.scheduler.advance(by: .milliseconds(250))
        #expect(fixture.manager.cancel(receiver))
        #expect(!fixture.manager.cancel(receiver))
        fixture.tick(12)
        let calls = fixture.log.calls(of: "a")
        #expect(calls.map(\.tick) == [
            CountdownTick(remaining: .seconds(9)), CountdownTick(remaining: .seconds(8)),
            CountdownTick(remaining: .milliseconds(7_750), end: .cancelled),
        ])
        #expect(fixture.scheduler.pendingCount == 0)
        withExtendedLifetime(receiver) {}
    }

    @Test func cancelOfAReceiverReleasedBeforeTheCallIsDeliveredCallsNothing() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        var receiver: Receiver? = Receiver("a")
        fixture.register(receiver!, for: .seconds(10))
        #expect(fixture.manager.cancel(receiver!))
        receiver = nil
        fixture.scheduler.runUntilIdle()
        #expect(fixture.log.all.isEmpty)
        withExtendedLifetime(receiver) {}
    }

    @Test func cancelOfAnUnknownReceiverReturnsFalse() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let stranger = Receiver("stranger")
        #expect(!fixture.manager.cancel(stranger))
        #expect(fixture.scheduler.pendingCount == 0)
    }

    @Test func cancelAllEndsEveryCountdownWithOneCancelledCallEach() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receivers = (0..<5).map { Receiver("r\($0)") }
        for receiver in receivers { fixture.register(receiver, for: .seconds(10)) }
        fixture.tick(1)
        #expect(fixture.manager.cancelAll() == 5)
        #expect(fixture.manager.count == 0)
        fixture.tick(12)
        for receiver in receivers {
            #expect(fixture.log.calls(of: receiver.name).map(\.tick.end) == [nil, .cancelled])
        }
        #expect(fixture.scheduler.pendingCount == 0)
        withExtendedLifetime(receivers) {}
    }

    @Test func finalTickComesExactlyOnceEvenWhenTheHandlerSetsStop() {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(2), stopWhen: { $0.isFinal })
        fixture.tick(5)
        #expect(fixture.log.calls(of: "a").map(\.tick.end) == [nil, .finished])
        #expect(!fixture.manager.cancel(receiver))
        withExtendedLifetime(receiver) {}
    }

    /// Random operations on virtual time; every registration's calls are checked afterwards:
    /// nothing after its terminal call, and exactly one terminal call unless its receiver was
    /// released (stopped ones end with `.stopped`, replaced ones with `.replaced`).
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func everyCountdownEndsWithExactlyOneTerminalCall(seed: UInt64) {
        var random = SeededLCG(seed: seed)
        let fixture = CountdownFixture(interval: .milliseconds(100))
        defer { fixture.tearDown() }
        let names = (0..<40).map { "r\($0)" }
        var receivers: [String: Receiver] = [:]
        var generation: [String: Int] = [:]
        // What the test expects of each registration label.
        enum Expected { case terminal, stopped(afterCalls: Int), replaced, none }
        var expected: [String: Expected] = [:]
        for step in 0..<400 {
            let name = names[Int(random.next() % UInt64(names.count))]
            switch random.next() % 6 {
            case 0, 1:
                let receiver = receivers[name] ?? Receiver(name)
                receivers[name] = receiver
                let previous = generation[name].map { "\(name)#\($0)" }
                generation[name, default: 0] += 1
                let label = "\(name)#\(generation[name]!)"
                let stopAfter = random.next() % 4 == 0 ? Int(random.next() % 5) : -1
                let seen = LockedValue(0)
                let outcome = fixture.register(
                    receiver, for: .milliseconds(Int64(random.next() % 1_000)), label: label,
                    stopWhen: { tick in
                        seen.withLock { $0 += 1; return $0 - 1 == stopAfter && !tick.isFinal }
                    })
                if outcome == .replaced, let previous { expected[previous] = .replaced }
                expected[label] = stopAfter >= 0 ? .stopped(afterCalls: stopAfter + 1) : .terminal
            case 2:
                if let receiver = receivers[name] { fixture.manager.cancel(receiver) }
            case 3:
                if receivers.removeValue(forKey: name) != nil, let current = generation[name] {
                    expected["\(name)#\(current)"] = Expected.none  // released: no call afterwards
                    // A `.replaced` call still queued is not made to a released receiver either.
                    for (label, expectation) in expected where label.hasPrefix("\(name)#") {
                        if case .replaced = expectation { expected[label] = Expected.none }
                    }
                }
            default:
                fixture.scheduler.advance(by: .milliseconds(Int64(random.next() % 250)))
            }
            _ = step
        }
        fixture.scheduler.advance(by: .seconds(5))
        #expect(fixture.manager.count == 0)
        #expect(fixture.scheduler.pendingCount == 0)
        let calls = fixture.log.all
        for (label, expectation) in expected {
            let mine = calls.filter { $0.name == label }
            let terminals = mine.filter(\.tick.isFinal)
            #expect(terminals.count <= 1, "seed \(seed): \(label) got \(terminals.count) terminal calls")
            if let last = mine.last, !terminals.isEmpty {
                #expect(last.tick.isFinal, "seed \(seed): \(label) was called after its terminal call")
            }
            switch expectation {
            case .terminal:
                #expect(
                    terminals.count == 1, "seed \(seed): \(label) ended without a terminal call: \(mine.map(\.tick))")
            case .stopped(let limit):
                // The stop flag's call, then its `.stopped` call — unless it finished first.
                #expect(mine.count <= limit + 1, "seed \(seed): \(label) was called after it set the stop flag")
                #expect(
                    terminals.count == 1 && [.stopped, .finished, .cancelled, .replaced].contains(terminals[0].tick.end),
                    "seed \(seed): \(label) ended with \(mine.map(\.tick))")
            case .replaced:
                #expect(
                    terminals.map(\.tick.end) == [.replaced],
                    "seed \(seed): \(label) was replaced but ended with \(mine.map(\.tick))")
            case .none:
                break
            }
        }
        withExtendedLifetime(receivers) {}
    }
}

/// A tiny repeatable generator for unit tests (the stress suite uses SeededRandom).
struct SeededLCG {
    private var state: UInt64
    init(seed: UInt64) { self.state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func next() -> UInt64 {
        self.state = self.state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return self.state >> 11
    }
}
