@testable import SerialCore
import Testing

/// Which waits the queue's counters time (`QueueCounters`), as a plain value: no threads, no clock
/// but the one the counters read (only the count of timed waits is checked, never their length).
@Suite("Queue counters: which waits are timed")
struct QueueCountersTests {
    /// `waits` waits of one item each, on a queue nobody watches: each begins in an empty FIFO
    /// and ends when its batch is taken.
    private func idleBusyCycles(_ waits: Int, watched: Bool = false) -> QueueCounters {
        var counters = QueueCounters()
        for progress in 0..<waits {
            counters.entered(depth: 1, watched: watched)
            counters.batchTaken(1, remaining: 0, progress: progress)
        }
        return counters
    }

    /// A queue whose first wait was timed and recorded, then whose second (untimed) wait's batch
    /// of two items was taken.
    private func anUntimedBatchOfTwoTaken() -> QueueCounters {
        var counters = QueueCounters()
        counters.entered(depth: 1, watched: false)
        counters.batchTaken(1, remaining: 0, progress: 0)
        counters.entered(depth: 1, watched: false)  // untimed
        counters.entered(depth: 2, watched: false)
        counters.batchTaken(2, remaining: 0, progress: 1)
        return counters
    }

    @Test func theFirstWaitAndThenOneInEightAreTimed() {
        #expect(self.idleBusyCycles(1).waitTime.count == 1, "a queue's first wait must be timed")
        #expect(self.idleBusyCycles(8).waitTime.count == 1)
        #expect(self.idleBusyCycles(9).waitTime.count == 2)
        #expect(self.idleBusyCycles(80).waitTime.count == 10)
    }

    @Test func aWaitThatBeginsWhileAWatchdogIsArmedIsAlwaysTimed() {
        #expect(self.idleBusyCycles(20, watched: true).waitTime.count == 20)
    }

    @Test func anUntimedWaitHasNoStartUntilAWatchdogLooksAndIsNeverRecorded() {
        var counters = QueueCounters()
        counters.entered(depth: 1, watched: false)  // the first: timed
        counters.batchTaken(1, remaining: 0, progress: 0)
        counters.entered(depth: 1, watched: false)  // the second: untimed
        #expect(counters.oldestEnteredAt == 0, "an untimed wait must not read the clock")
        var reads = 0
        counters.stampUntimedWaits(fifoIsEmpty: false, waitingInBatch: 0) {
            reads += 1
            return 12_345
        }
        #expect(reads == 1)
        #expect(counters.oldestEnteredAt == 12_345, "the look's time is the wait's start, for the watchdog")
        counters.stampUntimedWaits(fifoIsEmpty: false, waitingInBatch: 0) {
            reads += 1
            return 99_999
        }
        #expect(reads == 1, "a stamped wait keeps its first stamp (one report per wait)")
        counters.batchTaken(1, remaining: 0, progress: 1)
        #expect(counters.waitTime.count == 1, "a watchdog's stamp is a lower bound: never recorded as a wait")
    }

    @Test func aLookStampsAnUntimedBatchsWaitingItemsOnly() {
        var counters = self.anUntimedBatchOfTwoTaken()
        #expect(counters.batchTakenAt == 0)
        var reads = 0
        counters.stampUntimedWaits(fifoIsEmpty: true, waitingInBatch: 0) {
            reads += 1
            return 1
        }
        #expect(reads == 0, "nothing waits: no clock read, no stamp")
        counters.stampUntimedWaits(fifoIsEmpty: true, waitingInBatch: 1) { 777 }
        #expect(counters.batchTakenAt == 777)
        #expect(counters.oldestEnteredAt == 0, "the FIFO is empty: no wait to stamp")
    }

    /// A queue that never empties must not stay untimed for good: the items a batch leaves
    /// begin a wait of their own, sampled like any other, and once timed it stays timed.
    @Test func aQueueThatNeverEmptiesIsTimedAgainWithinEightBatches() {
        var counters = QueueCounters()
        counters.entered(depth: 1, watched: false)
        counters.batchTaken(1, remaining: 0, progress: 0)  // 1 timed
        counters.entered(depth: 1, watched: false)  // untimed
        for _ in 0..<40 { counters.entered(depth: 2, watched: false) }
        var progress = 1
        for _ in 0..<20 {
            counters.batchTaken(1, remaining: 5, progress: progress)
            progress += 1
        }
        // Waits begun: 1 (timed), 2 (untimed), then one per batch until the 8th of the run is timed
        // (the 9th wait, begun by the 7th batch); its batch and every later one are recorded.
        #expect(counters.waitTime.count == 1 + (20 - 7), "recorded \(counters.waitTime.count)")
    }

    /// Attack 44: the rest of an untimed batch, returned to the FIFO, was timed from its return,
    /// so its next batch recorded 1 ms for an 11 ms wait. It stays untimed: nothing recorded,
    /// and a watchdog's look stamps it.
    @Test func theRestOfAnUntimedBatchStaysUntimedWhenReturned() {
        var counters = self.anUntimedBatchOfTwoTaken()
        counters.returned(1, depth: 1)  // interrupted: one item back in the FIFO
        #expect(counters.oldestEnteredAt == 0, "the returned rest has no known start")
        counters.stampUntimedWaits(fifoIsEmpty: false, waitingInBatch: 0) { 4_242 }
        #expect(counters.oldestEnteredAt == 4_242, "a watchdog's look stamps it")
        counters.batchTaken(1, remaining: 0, progress: 2)
        #expect(counters.waitTime.count == 1, "only the first wait was recorded")
    }

    @Test func theRestOfATimedBatchKeepsItsWaitWhenReturned() {
        var counters = QueueCounters()
        counters.entered(depth: 1, watched: false)  // timed
        counters.entered(depth: 2, watched: false)
        counters.batchTaken(2, remaining: 0, progress: 0)
        let takenAt = counters.batchTakenAt
        #expect(takenAt != 0)
        counters.returned(1, depth: 1)
        #expect(counters.oldestEnteredAt == takenAt, "one wait goes on, from the batch's take")
        counters.batchTaken(1, remaining: 0, progress: 1)
        #expect(counters.waitTime.count == 2)
    }
}
