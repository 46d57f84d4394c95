import AsyncAlgorithms
import SerialRuntime
import SerialTesting
import Testing

/// swift-async-algorithms on the runtime's clocks: `WheelClock` on a real queue, and the same
/// clock on virtual time (`VirtualScheduler.clock`), where every instant is exact.
@Suite("swift-async-algorithms on WheelClock")
struct WheelClockAsyncAlgorithmsTests {
    @Test func aTimerSequenceTicksOnVirtualTimeAtExactInstants() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let start = clock.now
        let ticks = CallbackRecorder<MonotonicInstant>("ticks")
        let task = Task {
            for await instant in AsyncTimerSequence(interval: .seconds(1), clock: clock).prefix(3) {
                ticks.record(instant)
            }
        }
        for count in 1...3 {
            try await scheduler.waitUntilAsleep(1)
            scheduler.advance(by: .seconds(1))
            try await ticks.wait(forCount: count)
        }
        await task.value
        #expect(ticks.values == [start + .seconds(1), start + .seconds(2), start + .seconds(3)])
    }

    @Test func debounceEmitsTheLastValueOfABurstAtExactlyItsQuietPeriod() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let start = clock.now
        let input = AsyncChannel<Int>()
        // The debounce asks its upstream for the next value only after it has taken the previous
        // one and computed its deadline: counting those asks tells the test when time may move.
        let asks = CallbackRecorder<Void>("upstream asks")
        let output = CallbackRecorder<String>("debounced")
        let task = Task {
            for try await value in CountingAsks(base: input, asks: asks).debounce(for: .milliseconds(100), clock: clock) {
                output.record("\(value)@\((clock.now - start).milliseconds)")
            }
        }
        var sent = 0
        func send(_ value: Int) async throws {
            await input.send(value)
            sent += 1
            try await asks.wait(forCount: sent + 1)  // its deadline is set
        }
        // A burst at 0 ms: only its last value, 100 ms later.
        try await send(1)
        try await send(2)
        try await scheduler.waitUntilAsleep(1)
        scheduler.advance(by: .milliseconds(100))
        try await output.wait(forCount: 1)
        // 3 at 100 ms, 4 at 160 ms: 3 is dropped, 4 comes 100 ms after it, at 260 ms.
        try await send(3)
        try await scheduler.waitUntilAsleep(1)
        scheduler.advance(by: .milliseconds(60))
        try await send(4)
        scheduler.advance(by: .milliseconds(40))  // 200 ms: 3's deadline, moved by 4: sleeps again
        try await scheduler.waitUntilAsleep(1)
        #expect(output.values.count == 1, "3 was emitted although 4 followed within the quiet period")
        scheduler.advance(by: .milliseconds(60))
        try await output.wait(forCount: 2)
        input.finish()
        try await task.value
        #expect(output.values == ["2@100", "4@260"])
    }

    @Test func aTimerSequenceOnARealQueueTicksNeverEarly() async throws {
        let queue = SerialQueue(label: "async-algorithms")
        let clock = WheelClock(timers: TimerService(scheduler: queue))
        let start = clock.now
        var count = 0
        for await instant in AsyncTimerSequence(interval: .milliseconds(5), clock: clock).prefix(3) {
            count += 1
            // Fixed rate: tick k is due at start + k × 5 ms, and must not come before.
            #expect(instant >= start + .milliseconds(5 * count), "tick \(count) came early")
        }
        #expect(count == 3)
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 { self.components.seconds * 1000 + self.components.attoseconds / 1_000_000_000_000_000 }
}

/// `base`, recording each time its consumer asks for the next element.
struct CountingAsks<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
    typealias Element = Base.Element
    let base: Base
    let asks: CallbackRecorder<Void>

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let asks: CallbackRecorder<Void>

        mutating func next() async throws -> Base.Element? {
            self.asks.record()
            return try await self.base.next()
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.base.makeAsyncIterator(), asks: self.asks)
    }
}
