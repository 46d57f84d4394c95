import SerialCore
import SerialTestSupport
import Testing

/// A `sync` body that returns while another caller's turn is next in the FIFO passes the queue
/// straight to that caller (no worker or pool thread in between). What must hold whoever hands
/// the turn over: the FIFO's order, one owner at a time, nothing while suspended, exact counts.
@Suite("SerialQueue sync hand-off")
struct SyncHandOffTests {

    /// Behind a `sync` body, in this order: caller B's turn, async item 2, caller C's turn. The
    /// body suspends the queue before it returns; the test writes 0 and resumes it. Before the
    /// hand-off the order was the worker's; with it, B gets the queue from the body, and C must
    /// still wait for item 2.
    @Test(arguments: QueueMode.allCases) func aReturningBodyPassesTheQueueInFIFOOrderAndNotWhileSuspended(mode: QueueMode) {
        let queue = mode.queue(label: "pass-order")
        let log = LockedValue<[Int]>([])
        var callers: [(SerialQueue, TestSemaphore)] = []
        var executedBeforeLeaving = 0
        queue.sync {
            callers.append(onAThreadOfItsOwn("pass-b") { queue.sync { log.withLock { $0.append(1) } } })
            #expect(eventually { queue.statistics.syncWaits == 1 }, "caller B did not queue its turn")
            queue.async { log.withLock { $0.append(2) } }
            callers.append(onAThreadOfItsOwn("pass-c") { queue.sync { log.withLock { $0.append(3) } } })
            #expect(eventually { queue.statistics.syncWaits == 2 }, "caller C did not queue its turn")
            queue.suspend()
            executedBeforeLeaving = queue.statistics.executed
        }
        // Nothing may have started: the queue is suspended (a turn counts as it is handed over).
        #expect(queue.statistics.executed == executedBeforeLeaving, "a turn was handed over while the queue was suspended")
        log.withLock { $0.append(0) }
        queue.resume()
        for (_, done) in callers { #expect(done.wait(), "a sync caller never got its turn") }
        #expect(log.withLock { $0 } == [0, 1, 2, 3])
        let figures = queue.statistics
        #expect(figures.syncWaits == 2)
        #expect(figures.executed == figures.submitted, "\(figures)")
    }

    /// A worker's batch holds B's turn and async item 2; C's turn queues while B's body runs. B's
    /// return must give the queue back to the batch (item 2), not pass it to C.
    @Test(arguments: QueueMode.allCases) func aReturningBodyLeavesTheRestOfTheWorkersBatchFirst(mode: QueueMode) {
        let queue = mode.queue(label: "pass-batch")
        let log = LockedValue<[Int]>([])
        let gate = TestSemaphore()
        let holding = TestSemaphore()
        queue.async {
            holding.signal()
            _ = gate.wait()
        }
        #expect(holding.wait(), "the holding item did not start")
        let c = LockedValue<(SerialQueue, TestSemaphore)?>(nil)
        let b = onAThreadOfItsOwn("batch-b") {
            queue.sync {
                c.withLock { $0 = onAThreadOfItsOwn("batch-c") { queue.sync { log.withLock { $0.append(3) } } } }
                #expect(eventually { queue.statistics.syncWaits == 2 }, "caller C did not queue its turn")
                log.withLock { $0.append(1) }
            }
        }
        #expect(eventually { queue.statistics.syncWaits == 1 }, "caller B did not queue its turn")
        queue.async { log.withLock { $0.append(2) } }
        gate.signal()  // the worker's next batch: B's turn, then item 2
        #expect(b.1.wait(), "caller B never got its turn")
        #expect(c.withLock { $0 }?.1.wait() == true, "caller C never got its turn")
        queue.sync {}
        #expect(log.withLock { $0 } == [1, 2, 3])
    }

    /// Two threads calling `sync` in a loop while a third posts: every call runs alone, in each
    /// thread's order, and the counts stay exact however the turns were passed.
    @Test(arguments: QueueMode.allCases) func contendedCallersRunOneAtATimeWithExactCounts(mode: QueueMode) {
        let queue = mode.queue(label: "pass-contended")
        let inside = LockedValue(0)
        let most = LockedValue(0)
        let calls = 2_000
        let ran = LockedValue(0)
        runThreads(3) { index in
            if index < 2 {
                for _ in 0..<calls {
                    queue.sync {
                        let now = inside.withLock { $0 += 1; return $0 }
                        most.withLock { $0 = max($0, now) }
                        inside.withLock { $0 -= 1 }
                    }
                }
            } else {
                for _ in 0..<calls { queue.async { ran.withLock { $0 += 1 } } }
            }
        }
        queue.sync {}
        #expect(most.withLock { $0 } == 1, "two sync bodies ran at once")
        #expect(ran.withLock { $0 } == calls)
        let figures = queue.statistics
        #expect(figures.executed == figures.submitted, "\(figures)")
    }
}
