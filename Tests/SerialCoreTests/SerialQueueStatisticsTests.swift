import SerialCore
import SerialTesting
import SerialTestSupport
import Synchronization
import Testing

@Suite("SerialQueue statistics")
struct SerialQueueStatisticsTests {
    @Test func aNewQueueCountsNothing() {
        let queue = SerialQueue(label: "fresh")
        let figures = queue.statistics
        #expect(figures == QueueStatistics())
        #expect(figures.depth == 0)
    }

    @Test func queuedWorkShowsAsDepthAndHighWaterThenAsExecuted() {
        let queue = SerialQueue(label: "counted")
        queue.suspend()
        for _ in 0..<10 { queue.async {} }
        var figures = queue.statistics
        #expect(figures.submitted == 10)
        #expect(figures.executed == 0)
        #expect(figures.depth == 10)
        #expect(figures.highWaterDepth == 10)
        queue.resume()
        queue.sync {}
        figures = queue.statistics
        #expect(figures.executed == figures.submitted, "\(figures)")
        #expect(figures.depth == 0)
        #expect(figures.highWaterDepth >= 10)  // 11 when the sync call found the batch still running
        #expect(figures.waitTime.count >= 1, "the suspended batch's wait was not recorded")
        #expect(figures.waitTime.total > .zero)
    }

    @Test func aSyncCallThatWaitsIsCountedOnce() {
        let queue = SerialQueue(label: "sync-waits")
        queue.suspend()
        queue.async {}
        let done = TestSemaphore()
        runThreads(2) { index in
            if index == 0 {
                queue.sync {}  // suspended: must wait for its turn
                done.signal()
            } else {
                #expect(eventually { queue.statistics.syncWaits == 1 }, "the waiting sync call was not counted")
                queue.resume()
                #expect(done.wait(), "the sync call never got its turn")
            }
        }
        let figures = queue.statistics
        #expect(figures.syncWaits == 1)
        #expect(figures.submitted == 2)
        #expect(figures.executed == 2)
    }

    @Test func anIdleSyncIsNotAnItem() {
        let queue = SerialQueue(label: "idle-sync")
        for _ in 0..<100 { queue.sync {} }
        let figures = queue.statistics
        #expect(figures.syncWaits + figures.submitted <= 100)
        #expect(figures.depth == 0)
    }

    @Test func droppedWorkIsCountedAndLeavesTheDepth() {
        let queue = SerialQueue(label: "dropping")
        queue.suspend()
        for _ in 0..<7 { queue.async {} }
        queue.shutdown(.cancelPending)
        let figures = queue.statistics
        #expect(figures.submitted == 7)
        #expect(figures.dropped == 7)
        #expect(figures.depth == 0)
    }

    @Test(arguments: [0 as UInt64, 999, 1_000, 1_999, 2_000, 1_000_000, 3_600_000_000_000, .max])
    func histogramBucketsBoundTheirDurations(nanoseconds: UInt64) {
        let bucket = WaitTimeHistogram.bucket(forNanoseconds: nanoseconds)
        #expect((0..<WaitTimeHistogram.bucketCount).contains(bucket))
        if let upper = WaitTimeHistogram.upperBound(ofBucket: bucket) {
            #expect(Duration.nanoseconds(Int64(clamping: nanoseconds)) < upper)
        }
        if bucket > 0, let lower = WaitTimeHistogram.upperBound(ofBucket: bucket - 1) {
            #expect(Duration.nanoseconds(Int64(clamping: nanoseconds)) >= lower)
        }
    }

    @Test func p99IsAtLeastTheTrueQuantileAndAtMostTheMaximum() {
        var histogram = WaitTimeHistogram()
        for microseconds in 1...100 { histogram.record(nanoseconds: UInt64(microseconds) * 1_000) }
        #expect(histogram.count == 100)
        #expect(histogram.p99 >= .microseconds(99))
        #expect(histogram.p99 <= histogram.maximum)
        #expect(histogram.maximum == .microseconds(100))
        #expect(WaitTimeHistogram().p99 == .zero)
    }

    /// The buckets appear at the second duration (a histogram of one needs none): before and
    /// after, they and the percentiles are what plain counting gives.
    @Test func bucketsMatchPlainCountingFromTheFirstDuration() {
        var generator = SeededRandom(seed: 21)
        var histogram = WaitTimeHistogram()
        var counted = Array(repeating: 0, count: WaitTimeHistogram.bucketCount)
        #expect(histogram.buckets == counted)
        for _ in 0..<200 {
            let nanoseconds = UInt64.random(in: 0...5_000_000_000, using: &generator) >> UInt64.random(in: 0...30, using: &generator)
            histogram.record(nanoseconds: nanoseconds)
            counted[WaitTimeHistogram.bucket(forNanoseconds: nanoseconds)] += 1
            #expect(histogram.buckets == counted)
            #expect(histogram.buckets.reduce(0, +) == histogram.count)
        }
        var single = WaitTimeHistogram()
        single.record(nanoseconds: 3_000)
        #expect(single.p99 == .microseconds(3))
        #expect(single != WaitTimeHistogram())
    }
}
