import SerialCore
@testable import SerialPolling
import SerialTestSupport
import SerialTesting
import Testing

/// The pure timing arithmetic: cadence, backoff ceiling, jitter bounds, hints, deadline clamp.
@Suite("PollSchedule")
struct PollScheduleTests {
    let minimum = Duration.milliseconds(100)
    let maximum = Duration.seconds(30)

    @Test(arguments: 1...70)
    func backoffCeilingDoublesFromTheMinimumUpToTheMaximum(errors: Int) {
        var expected = self.minimum
        for _ in 1..<errors where expected < self.maximum { expected = min(expected * 2, self.maximum) }
        let ceiling = PollSchedule.backoffCeiling(consecutiveErrors: errors, minimum: self.minimum, maximum: self.maximum)
        #expect(ceiling == expected)
    }

    @Test func backoffCeilingSaturatesInsteadOfOverflowing() {
        let huge = Duration.seconds(Int64.max / 2_000_000_000)
        for errors in [40, 63, 64, 1000, Int.max] {
            #expect(PollSchedule.backoffCeiling(consecutiveErrors: errors, minimum: .seconds(1), maximum: huge) == huge)
        }
    }

    @Test(arguments: 1...12)
    func jitteredDelayStaysBetweenTheMinimumAndTheCeiling(errors: Int) {
        var random = SeededRandom(seed: UInt64(errors))
        let ceiling = PollSchedule.backoffCeiling(consecutiveErrors: errors, minimum: self.minimum, maximum: self.maximum)
        var below = 0
        var above = 0
        for _ in 0..<2000 {
            let delay = PollSchedule.errorDelay(
                consecutiveErrors: errors, minimum: self.minimum, maximum: self.maximum, hint: nil, using: &random)
            #expect(delay >= self.minimum && delay <= ceiling, "delay \(delay) outside [\(self.minimum), \(ceiling)]")
            let middle = self.minimum + (ceiling - self.minimum) / 2
            if delay < middle { below += 1 } else if delay > middle { above += 1 }
        }
        if errors >= 2 {
            // Full jitter spreads over the whole window, not a point: both halves are used.
            #expect(below > 500 && above > 500, "below \(below), above \(above) of 2000")
        }
    }

    @Test func firstRetryWaitsExactlyTheMinimum() {
        var random = SeededRandom(seed: 9)
        for _ in 0..<100 {
            let delay = PollSchedule.errorDelay(
                consecutiveErrors: 1, minimum: self.minimum, maximum: self.maximum, hint: nil, using: &random)
            #expect(delay == self.minimum)
        }
    }

    @Test(arguments: [
        (Duration.milliseconds(1), Duration.milliseconds(100)),
        (.milliseconds(100), .milliseconds(100)),
        (.milliseconds(2500), .milliseconds(2500)),
        (.seconds(30), .seconds(30)),
        (.seconds(3600), .seconds(30)),
        (.zero - .seconds(5), .milliseconds(100)),
    ])
    func serverHintIsClampedToTheBackoffBounds(hint: Duration, expected: Duration) {
        var random = SeededRandom(seed: 1)
        for errors in [1, 4, 40] {
            let delay = PollSchedule.errorDelay(
                consecutiveErrors: errors, minimum: self.minimum, maximum: self.maximum, hint: hint, using: &random)
            #expect(delay == expected)
        }
    }

    @Test func sameSeedGivesTheSameDelays() {
        var a = SeededRandom(seed: 77)
        var b = SeededRandom(seed: 77)
        for errors in 1...30 {
            let first = PollSchedule.errorDelay(
                consecutiveErrors: errors, minimum: self.minimum, maximum: self.maximum, hint: nil, using: &a)
            let second = PollSchedule.errorDelay(
                consecutiveErrors: errors, minimum: self.minimum, maximum: self.maximum, hint: nil, using: &b)
            #expect(first == second)
        }
    }

    @Test func nextStartIsTheLaterOfIntervalAndResponse() {
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        let interval = Duration.seconds(1)
        // Quick response: the interval decides.
        #expect(PollSchedule.nextStart(previousStart: start, response: start + .milliseconds(300), interval: interval)
            == start + interval)
        // Slow response: the response decides (no idle gap).
        #expect(PollSchedule.nextStart(previousStart: start, response: start + .milliseconds(1700), interval: interval)
            == start + .milliseconds(1700))
        // After an error: also at least response + delay.
        #expect(
            PollSchedule.nextStart(
                previousStart: start, response: start + .milliseconds(300), interval: interval,
                errorDelay: .milliseconds(900)) == start + .milliseconds(1200))
        #expect(
            PollSchedule.nextStart(
                previousStart: start, response: start + .milliseconds(300), interval: interval,
                errorDelay: .milliseconds(500)) == start + interval)
    }

    @Test func attemptDeadlineIsClampedToTheOverallDeadline() {
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        let overall = start + .milliseconds(400)
        #expect(PollSchedule.attemptDeadline(start: start, attemptTimeout: .seconds(1), deadline: overall) == overall)
        #expect(
            PollSchedule.attemptDeadline(start: start, attemptTimeout: .milliseconds(300), deadline: overall)
                == start + .milliseconds(300))
        #expect(PollSchedule.attemptDeadline(start: start, attemptTimeout: nil, deadline: overall) == overall)
        #expect(
            PollSchedule.attemptDeadline(start: start, attemptTimeout: .seconds(2), deadline: nil) == start + .seconds(2))
        #expect(PollSchedule.attemptDeadline(start: start, attemptTimeout: nil, deadline: nil) == nil)
    }
}
