import SerialCore
import SerialCountdown
import SerialTestSupport
import SerialTesting
import Testing

/// `for await tick in manager.countdown(from:)`: ticks in order, finishing on the terminal one;
/// the consumer going away ends the countdown.
@Suite struct CountdownAsyncSequenceTests {
    @Test func sequenceYieldsEachTickAndFinishesAfterTheFinalOne() async {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        var iterator = fixture.manager.countdown(from: .seconds(3)).makeAsyncIterator()
        var seen: [CountdownTick] = []
        for _ in 0..<3 {
            fixture.tick(1)
            if let tick = await iterator.next() { seen.append(tick) }
        }
        #expect(seen == [
            CountdownTick(remaining: .seconds(2)), CountdownTick(remaining: .seconds(1)),
            CountdownTick(remaining: .zero, end: .finished),
        ])
        #expect(await iterator.next() == nil)
        #expect(fixture.scheduler.pendingCount == 0)
    }

    @Test func slowConsumerSeesTheNewestTickAndNeverMissesTheFinalOne() async {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let sequence = fixture.manager.countdown(from: .seconds(4))
        fixture.tick(2)
        var seen: [CountdownTick] = []
        var iterator = sequence.makeAsyncIterator()
        if let tick = await iterator.next() { seen.append(tick) }
        fixture.tick(3)
        while let tick = await iterator.next() { seen.append(tick) }
        #expect(seen == [CountdownTick(remaining: .seconds(2)), CountdownTick(remaining: .zero, end: .finished)])
    }

    @Test func cancellingTheIteratingTaskCancelsTheCountdown() async {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let sequence = fixture.manager.countdown(from: .seconds(60))
        #expect(fixture.manager.count == 1)
        let consumer = Task {
            var count = 0
            for await _ in sequence { count += 1 }
            return count
        }
        consumer.cancel()
        _ = await consumer.value
        #expect(fixture.manager.count == 0)
        #expect(fixture.scheduler.pendingCount == 0)
        fixture.tick(2)
        #expect(fixture.scheduler.ranCount == 0)
    }

    @Test func droppingTheSequenceEndsTheCountdownAtTheNextTick() async {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        do {
            let sequence = fixture.manager.countdown(from: .seconds(60))
            fixture.tick(1)
            for await _ in sequence { break }
        }
        fixture.tick(1)
        #expect(fixture.manager.count == 0)
        #expect(fixture.scheduler.pendingCount == 0)
    }

    @Test func cancelAllFinishesTheSequenceWithACancelledElement() async {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        var iterator = fixture.manager.countdown(from: .seconds(10)).makeAsyncIterator()
        fixture.tick(1)
        #expect(await iterator.next() == CountdownTick(remaining: .seconds(9)))
        #expect(fixture.manager.cancelAll() == 1)
        fixture.scheduler.runUntilIdle()
        #expect(await iterator.next() == CountdownTick(remaining: .seconds(9), end: .cancelled))
        #expect(await iterator.next() == nil)
    }

    @Test(.timeLimit(.minutes(1)), arguments: QueueMode.allCases)
    func sequenceFinishesWhenItsQueueDropsTheTickerAndTheManagerGoesAway(mode: QueueMode) async {
        let queue = mode.queue(label: "cd.abandon")
        // Only the armed tick on `queue` keeps this manager alive.
        var iterator = CountdownManager(interval: .seconds(60), queue: queue)
            .countdown(from: .seconds(600)).makeAsyncIterator()
        _ = queue.shutdown(.cancelPending)
        // Its one terminal element says why (issue 11), then the sequence finishes.
        #expect(await iterator.next()?.end == .shutDown(.shutDown(scheduler: "cd.abandon")))
        #expect(await iterator.next() == nil)
    }

    @Test func sequenceCountdownsShareTheTickerWithRegisteredOnes() async {
        let fixture = CountdownFixture()
        defer { fixture.tearDown() }
        let receiver = Receiver("a")
        fixture.register(receiver, for: .seconds(5))
        var iterator = fixture.manager.countdown(from: .seconds(2)).makeAsyncIterator()
        #expect(fixture.scheduler.pendingCount == 1)
        fixture.tick(1)
        #expect(await iterator.next() == CountdownTick(remaining: .seconds(1)))
        #expect(fixture.log.seconds(of: "a") == [4])
        withExtendedLifetime(receiver) {}
    }
}
