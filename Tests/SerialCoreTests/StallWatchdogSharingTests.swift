import Glibc
import SerialCore
import SerialTestSupport
import Testing

/// Several watchdogs on one queue, and a watchdog stopped from its own report.
@Suite("StallWatchdog: shared queues and stopping from a report")
struct StallWatchdogSharingTests {
    @Test func twoWatchdogsOnOneQueueEachReportItsStall() {
        let first = StallWatchdogTests.Reports()
        let second = StallWatchdogTests.Reports()
        let a = StallWatchdog(runningThreshold: .milliseconds(50), waitingThreshold: .seconds(60)) { first.add($0) }
        let b = StallWatchdog(runningThreshold: .milliseconds(50), waitingThreshold: .seconds(60)) { second.add($0) }
        let queue = SerialQueue(label: "shared")
        a.watch(queue)
        b.watch(queue)
        // Both asleep over the idle queue, so both are armed on it: the stall must wake both.
        #expect(eventually { a._isAsleep && b._isAsleep }, "the watchdogs never went to sleep over an idle queue")
        let release = TestSemaphore()
        queue.async { _ = release.wait(timeout: .seconds(30)) }
        #expect(first.arrived.wait(timeout: .seconds(20)), "the first watchdog did not report the stall")
        #expect(second.arrived.wait(timeout: .seconds(20)), "the second watchdog did not report the stall")
        release.signal()
        queue.sync {}
        a.stop()
        b.stop()
        #expect(first.all.map(\.queueLabel) == ["shared"])
        #expect(second.all.map(\.queueLabel) == ["shared"])
    }

    @Test func stoppingOneWatchdogLeavesTheOtherWatching() {
        let kept = StallWatchdogTests.Reports()
        let stopped = StallWatchdog(runningThreshold: .milliseconds(50), waitingThreshold: .seconds(60)) { _ in }
        let watching = StallWatchdog(runningThreshold: .milliseconds(50), waitingThreshold: .seconds(60)) {
            kept.add($0)
        }
        let queue = SerialQueue(label: "one-left")
        watching.watch(queue)
        stopped.watch(queue)
        #expect(eventually { watching._isAsleep && stopped._isAsleep }, "the watchdogs never went to sleep")
        stopped.stopWatching(queue)
        stopped.stop()
        let release = TestSemaphore()
        queue.async { _ = release.wait(timeout: .seconds(30)) }
        #expect(kept.arrived.wait(timeout: .seconds(20)), "stopping one watchdog disarmed the other")
        release.signal()
        queue.sync {}
        watching.stop()
        #expect(kept.all.map(\.kind) == [.running])
    }

    /// Runs in a child process: on failure the old code trapped in `pthread_join` (error 35).
    @Test func stopFromTheReportClosureReturns() async {
        await #expect(processExitsWith: .success) {
            let stopped = TestSemaphore()
            let holder = LockedValue<StallWatchdog?>(nil)
            let watchdog = StallWatchdog(runningThreshold: .milliseconds(20), waitingThreshold: .seconds(60)) { _ in
                holder.withLock { $0 }?.stop()
                stopped.signal()
            }
            holder.withLock { $0 = watchdog }
            let queue = SerialQueue(label: "stop-from-report")
            watchdog.watch(queue)
            let release = TestSemaphore()
            queue.async { _ = release.wait(timeout: .seconds(30)) }
            guard stopped.wait(timeout: .seconds(20)) else { exit(3) }
            release.signal()
            queue.sync {}
            watchdog.stop()  // already stopped: does nothing
            exit(0)
        }
    }

    @Test func droppingTheLastReferenceInTheReportClosureReturns() async {
        await #expect(processExitsWith: .success) {
            let reported = TestSemaphore()
            let holder = LockedValue<StallWatchdog?>(nil)
            holder.withLock {
                $0 = StallWatchdog(runningThreshold: .milliseconds(20), waitingThreshold: .seconds(60)) { _ in
                    let last = holder.withLock { held in
                        defer { held = nil }
                        return held
                    }
                    _ = consume last  // the last reference goes here, on the watchdog's thread
                    reported.signal()
                }
            }
            let queue = SerialQueue(label: "drop-in-report")
            holder.withLock { $0 }?.watch(queue)
            let release = TestSemaphore()
            queue.async { _ = release.wait(timeout: .seconds(30)) }
            guard reported.wait(timeout: .seconds(20)) else { exit(3) }
            release.signal()
            queue.sync {}
            exit(0)
        }
    }
}
