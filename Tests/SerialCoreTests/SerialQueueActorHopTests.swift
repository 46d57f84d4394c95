import SerialCore
import SerialTestSupport
import Testing

/// An actor on a SerialQueue that is called into.
private actor Ledger {
    let queue: SerialQueue
    private(set) var entries = 0

    init(queue: SerialQueue) {
        self.queue = queue
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }

    /// Returns whether it ran on the queue.
    func record() -> Bool {
        self.entries += 1
        return self.queue.isCurrent
    }
}

/// An actor on a SerialQueue that calls a `Ledger`, touching its own state after every call, so
/// the hop back to it cannot be left out.
private actor Teller {
    let queue: SerialQueue
    private var calls = 0

    init(queue: SerialQueue) {
        self.queue = queue
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }

    /// What `callRepeatedly` saw.
    struct Calls: Sendable {
        /// Items that entered the teller's queue and the ledger's queue during the calls.
        var enqueuedHere: Int
        var enqueuedThere: Int
        /// Whether every ledger call ran on the ledger's queue and every return on the teller's.
        var allOnTheirQueues: Bool
    }

    func callRepeatedly(_ ledger: Ledger, times: Int) async -> Calls {
        let here = self.queue.statistics.submitted
        let there = ledger.queue.statistics.submitted
        var allOnTheirQueues = true
        for _ in 0..<times {
            let ledgerOnQueue = await ledger.record()
            self.calls += 1
            allOnTheirQueues = allOnTheirQueues && ledgerOnQueue && self.queue.isCurrent
        }
        return Calls(
            enqueuedHere: self.queue.statistics.submitted - here,
            enqueuedThere: ledger.queue.statistics.submitted - there,
            allOnTheirQueues: allOnTheirQueues)
    }
}

/// An actor that suspends its own queue, then calls into another actor on that queue.
private actor Suspender {
    let queue: SerialQueue
    init(queue: SerialQueue) { self.queue = queue }
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.queue.asUnownedSerialExecutor() }

    /// Sets `returned` once the call into `ledger` came back; returns whether it ran on the queue.
    func suspendThenCall(_ ledger: Ledger, returned: TestFlag) async -> Bool {
        self.queue.suspend()
        let onQueue = await ledger.record()
        returned.set()
        return onQueue
    }
}

/// Leaves the caller's isolation for the generic executor (or the task's preferred executor).
@concurrent
private func stepAway(_ queue: SerialQueue) async -> Bool {
    queue.isCurrent
}

/// Runs `body` in a task of its own and waits for it with a bound; `nil` if it did not finish.
private func bounded<T: Sendable>(
    _ body: @escaping @Sendable () async -> T, executorPreference: (any TaskExecutor)? = nil
) async -> T? {
    let finished = TestFlag()
    let task = Task.detached(executorPreference: executorPreference) {
        let result = await body()
        finished.set()
        return result
    }
    guard await eventually(timeout: .seconds(120), { finished.isSet }) else { return nil }
    return await task.value
}

/// Which calls into an actor need a hop (an item through the queue's FIFO) and which run inline,
/// counted by the queues themselves (`statistics.submitted`), never timed.
@Suite("SerialQueue: actor hops")
struct SerialQueueActorHopTests {
    /// A call from an actor on a queue into another actor on the same queue, and the return from
    /// it, run inline: the queue's worker already holds the queue, so the runtime needs no switch.
    @Test(arguments: QueueMode.allCases) func aCallIntoAnActorOnTheCurrentQueueEnqueuesNothing(mode: QueueMode) async {
        let queue = mode.queue(label: "hop-same")
        let teller = Teller(queue: queue)
        let ledger = Ledger(queue: queue)
        let calls = 200
        guard let seen = await bounded({ await teller.callRepeatedly(ledger, times: calls) }) else {
            Issue.record("\(calls) calls between two actors on one queue did not finish within 120 s")
            return
        }
        #expect(seen.allOnTheirQueues)
        #expect(
            seen.enqueuedHere == 0,
            "\(calls) calls into an actor on the current queue put \(seen.enqueuedHere) items through its FIFO")
        #expect(await ledger.entries == calls)
    }

    /// A task that prefers the queue as its task executor calls nonisolated async functions
    /// without leaving the queue's thread: no item per call.
    @Test(arguments: QueueMode.allCases) func aTaskPreferringTheQueueCallsNonisolatedFunctionsInline(mode: QueueMode) async {
        let queue = mode.queue(label: "hop-nonisolated")
        let calls = 200
        let seen = await bounded(
            {
                let before = queue.statistics.submitted
                var allOnQueue = true
                for _ in 0..<calls { allOnQueue = await stepAway(queue) && allOnQueue }
                return (enqueued: queue.statistics.submitted - before, allOnQueue: allOnQueue)
            }, executorPreference: queue)
        guard let seen else {
            Issue.record("\(calls) nonisolated calls from a task preferring the queue did not finish within 120 s")
            return
        }
        #expect(seen.allOnQueue)
        #expect(
            seen.enqueued == 0,
            "\(calls) nonisolated calls from a task preferring the queue put \(seen.enqueued) items through its FIFO")
    }

    /// The runtime switches inline only to a default actor or the generic executor: a call into
    /// an actor on another queue, and the return from it, each go through that queue's FIFO
    /// (one item each way per round trip, whatever the mode).
    @Test(arguments: QueueMode.allCases) func aRoundTripToAnotherQueuePutsOneItemThroughEachQueue(mode: QueueMode) async {
        let here = mode.queue(label: "hop-here")
        let there = mode.queue(label: "hop-there")
        let teller = Teller(queue: here)
        let ledger = Ledger(queue: there)
        let calls = 200
        guard let seen = await bounded({ await teller.callRepeatedly(ledger, times: calls) }) else {
            Issue.record("\(calls) round trips between two queues did not finish within 120 s")
            return
        }
        #expect(seen.allOnTheirQueues)
        #expect(seen.enqueuedThere == calls, "\(calls) calls put \(seen.enqueuedThere) items through the callee's queue")
        #expect(seen.enqueuedHere == calls, "\(calls) returns put \(seen.enqueuedHere) items through the caller's queue")
    }

    /// `suspend()` stops the queue from starting its next item; a call the current piece makes
    /// into an actor on the same queue runs inline, as part of that piece, before `resume()`.
    @Test(arguments: QueueMode.allCases) func aCallIntoAnActorOnTheQueueRunsInlineAfterSuspend(mode: QueueMode) async {
        let queue = mode.queue(label: "hop-suspend")
        let suspender = Suspender(queue: queue)
        let ledger = Ledger(queue: queue)
        let returned = TestFlag()
        let call = Task { await suspender.suspendThenCall(ledger, returned: returned) }
        // Generous: under a sanitizer, with the rest of the suite, tasks waited 130 s for a thread.
        let ranBeforeResume = await eventually(timeout: .seconds(300)) { returned.isSet }
        queue.resume()
        #expect(ranBeforeResume, "a call into an actor on the suspended queue waited for resume()")
        #expect(await call.value, "the call ran off the queue")
    }
}
