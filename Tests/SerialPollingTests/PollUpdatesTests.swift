import SerialCore
import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// `for try await progress in poller.updates`: how the sequence ends, throws and cancels.
@Suite("Poller updates sequence")
struct PollUpdatesTests {
    @Test func sequenceYieldsEveryUpdateThenEndsWhenDone() async throws {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler, answers: [10, 50, 50, 100].map { .value($0) })
        let poller = makePoller(server)
        var iterator = poller.updates.makeAsyncIterator()
        scheduler.advance(by: .seconds(60))  // the whole poll runs; its updates wait in the buffer

        var seen: [Int] = []
        while let value = try await iterator.next() { seen.append(value) }
        #expect(seen == [10, 50, 100])
        #expect(try await iterator.next() == nil, "a finished sequence must keep returning nil")
        #expect(poller.outcome?.kind == "completed")
    }

    @Test func sequenceThrowsTheLastErrorAfterItsUpdates() async throws {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(
            scheduler: scheduler,
            answers: [.value(30), .error(ServerError(code: 1)), .error(ServerError(code: 2))])
        let policy = testPolicy(
            backoff: .init(minimumDelay: .milliseconds(100), maximumDelay: .seconds(1), maximumConsecutiveErrors: 2))
        let poller = makePoller(server, policy: policy)
        var iterator = poller.updates.makeAsyncIterator()
        scheduler.advance(by: .seconds(60))

        var seen: [Int] = []
        do {
            while let value = try await iterator.next() { seen.append(value) }
            Issue.record("the sequence ended normally after a failure")
        } catch {
            #expect(error as? ServerError == ServerError(code: 2))
        }
        #expect(seen == [30])
        #expect(try await iterator.next() == nil, "after throwing, the sequence returns nil")
    }

    @Test func sequenceThrowsTimedOutAtTheDeadline() async {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .silence }
        let poller = makePoller(server, policy: testPolicy(deadline: .seconds(3)))
        var iterator = poller.updates.makeAsyncIterator()
        scheduler.advance(by: .seconds(60))
        await #expect(throws: PollError.timedOut) { _ = try await iterator.next() }
    }

    @Test func cancelOfThePollerEndsTheSequenceWithCancellationError() async {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .silence }
        let poller = makePoller(server)
        var iterator = poller.updates.makeAsyncIterator()
        scheduler.runUntilIdle()
        #expect(poller.cancel())
        scheduler.runUntilIdle()
        await #expect(throws: CancellationError.self) { _ = try await iterator.next() }
    }

    @Test func cancellingTheIteratingTaskCancelsThePoll() async {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { _ in .silence }
        let poller = makePoller(server)
        let task = Task { () -> String in
            do {
                for try await _ in poller.updates {}
                return "ended normally"
            } catch is CancellationError {
                return "CancellationError"
            } catch {
                return "\(error)"
            }
        }
        #expect(await until { poller.isRunning }, "the loop never started the poll")
        task.cancel()
        #expect(await task.value == "CancellationError")
        #expect(poller.outcome?.kind == "cancelled")
        scheduler.runUntilIdle()
        #expect(server.queryCount <= 1)
        #expect(scheduler.pendingCount == 0, "a timer outlived the cancelled loop")
    }

    @Test func leavingTheLoopEarlyCancelsThePoll() async throws {
        let scheduler = VirtualScheduler()
        let server = SimulatedServer(scheduler: scheduler) { attempt in .value(attempt * 10) }
        let poller = makePoller(server)
        let task = Task { () -> Int? in
            for try await value in poller.updates { return value }
            return nil
        }
        #expect(await until { poller.isRunning }, "the loop never started the poll")
        scheduler.runUntilIdle()  // attempt 1 answers 10 at once; the loop takes it and returns
        #expect(try await task.value == 10)
        #expect(await until { poller.outcome != nil }, "the poll outlived its loop")
        #expect(poller.outcome?.kind == "cancelled")
        scheduler.advance(by: .seconds(10))
        #expect(server.queryCount == 1)
    }
}
