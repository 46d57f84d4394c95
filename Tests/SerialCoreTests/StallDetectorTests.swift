@testable import SerialCore
import Testing

/// The stall decisions on virtual time: samples and instants are made up by the test.
@Suite("Stall detector")
struct StallDetectorTests {
    private static let millisecond: UInt64 = 1_000_000

    private func sample(running: Bool = true, progress: Int = 0, waitingSince: UInt64 = 0) -> StallSample {
        StallSample(
            label: "q", isRunning: running, progress: progress, oldestWaitingSince: waitingSince,
            waitingItems: waitingSince == 0 ? 0 : 3, runningThread: 42, workerThread: 42)
    }

    @Test func workThatStopsProgressingIsReportedOnceAfterTheThreshold() {
        var detector = StallDetector(runningThreshold: .milliseconds(100), waitingThreshold: .seconds(10))
        var reports: [StallWatchdog.Stall] = []
        for tick in 0...10 {
            reports += detector.observe(self.sample(progress: 7), now: UInt64(tick) * 25 * Self.millisecond)
        }
        #expect(reports.count == 1)
        #expect(reports.first?.kind == .running)
        #expect(reports.first?.duration == .milliseconds(100))
        #expect(reports.first?.threadID == 42)
    }

    @Test func workThatKeepsProgressingIsNeverReported() {
        var detector = StallDetector(runningThreshold: .milliseconds(100), waitingThreshold: .seconds(10))
        for tick in 0...100 {
            #expect(detector.observe(self.sample(progress: tick), now: UInt64(tick) * 50 * Self.millisecond).isEmpty)
        }
    }

    @Test func anIdleQueueIsNeverReportedAndStartsAfresh() {
        var detector = StallDetector(runningThreshold: .milliseconds(100), waitingThreshold: .milliseconds(100))
        #expect(detector.observe(self.sample(progress: 1), now: 0).isEmpty)
        #expect(detector.observe(self.sample(running: false, progress: 1), now: 90 * Self.millisecond).isEmpty)
        // Running again with the same count: the clock starts now, not at the first look.
        #expect(detector.observe(self.sample(progress: 1), now: 150 * Self.millisecond).isEmpty)
        #expect(detector.observe(self.sample(progress: 1), now: 200 * Self.millisecond).isEmpty)
        #expect(detector.observe(self.sample(progress: 1), now: 250 * Self.millisecond).count == 1)
    }

    @Test func aNewStallAfterProgressIsReportedAgain() {
        var detector = StallDetector(runningThreshold: .milliseconds(100), waitingThreshold: .seconds(10))
        var reports = 0
        for (progress, now) in [(1, 0), (1, 100), (1, 200), (2, 300), (2, 400), (2, 500)] {
            reports += detector.observe(self.sample(progress: progress), now: UInt64(now) * Self.millisecond).count
        }
        #expect(reports == 2)
    }

    @Test func anItemWaitingPastTheThresholdIsReportedOncePerOldestItem() {
        var detector = StallDetector(runningThreshold: .seconds(10), waitingThreshold: .milliseconds(100))
        let since = 1_000 * Self.millisecond
        var reports: [StallWatchdog.Stall] = []
        for offset in stride(from: 0, through: 300, by: 50) {
            reports += detector.observe(
                self.sample(progress: offset, waitingSince: since), now: since + UInt64(offset) * Self.millisecond)
        }
        #expect(reports.map(\.kind) == [.waiting])
        #expect(reports.first?.duration == .milliseconds(100))
        #expect(reports.first?.waitingItems == 3)
        let later = since + 500 * Self.millisecond
        #expect(detector.observe(self.sample(progress: 99, waitingSince: later), now: later + 100 * Self.millisecond).count == 1)
    }
}
