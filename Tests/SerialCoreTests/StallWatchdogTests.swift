import Glibc
import SerialCore
import SerialTestSupport
import Synchronization
import Testing

/// The watchdog on real queues. Thresholds are short; every wait has a timeout.
@Suite("StallWatchdog")
struct StallWatchdogTests {
    final class Reports: Sendable {
        private let stalls = LockedValue<[StallWatchdog.Stall]>([])
        let arrived = TestSemaphore()
        func add(_ stall: StallWatchdog.Stall) {
            self.stalls.withLock { $0.append(stall) }
            self.arrived.signal()
        }
        var all: [StallWatchdog.Stall] { self.stalls.withLock { $0 } }
    }

    @Test func aBlockedQueueIsReportedExactlyOnceNamingItsLabelAndThread() {
        let reports = Reports()
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(50), waitingThreshold: .seconds(60)) {
            reports.add($0)
        }
        let blocked = SerialQueue(label: "blocked")
        let healthy = SerialQueue(label: "healthy")
        let idle = SerialQueue(label: "idle")
        for queue in [blocked, healthy, idle] { watchdog.watch(queue) }
        let release = TestSemaphore()
        let workerID = Atomic<Int32>(0)
        blocked.async {
            workerID.store(CurrentThread.systemID, ordering: .relaxed)
            _ = release.wait(timeout: .seconds(30))
        }
        #expect(reports.arrived.wait(timeout: .seconds(20)), "no stall was reported for a queue blocked past 50 ms")
        // Keep the healthy queue busy with short work meanwhile, and let the blocked one stay
        // blocked for several more looks: still one report.
        for _ in 0..<20 { healthy.sync { healthy.async {} } }
        _ = reports.arrived.wait(timeout: .milliseconds(300))
        release.signal()
        blocked.sync {}
        watchdog.stop()
        let all = reports.all
        #expect(all.count == 1, "\(all)")
        #expect(all.first?.kind == .running)
        #expect(all.first?.queueLabel == "blocked")
        #expect(all.first?.threadID == workerID.load(ordering: .relaxed))
        #expect((all.first?.duration ?? .zero) >= .milliseconds(50))
        #expect(all.first?.description.contains("SerialQueue \"blocked\"") == true)
    }

    @Test func aSuspendedQueueWithWaitingWorkIsReportedAsWaiting() {
        let reports = Reports()
        let watchdog = StallWatchdog(runningThreshold: .seconds(60), waitingThreshold: .milliseconds(50)) {
            reports.add($0)
        }
        let queue = SerialQueue(label: "held-back")
        watchdog.watch(queue)
        queue.suspend()
        queue.async {}
        #expect(reports.arrived.wait(timeout: .seconds(20)), "no stall was reported for work waiting past 50 ms")
        queue.resume()
        queue.sync {}
        watchdog.stop()
        #expect(reports.all.map(\.kind) == [.waiting])
        #expect(reports.all.first?.queueLabel == "held-back")
        #expect(reports.all.first?.waitingItems == 1)
    }

    @Test func aSyncCallWaitingOnASuspendedQueueWakesASleepingWatchdog() {
        let reports = Reports()
        let watchdog = StallWatchdog(runningThreshold: .seconds(60), waitingThreshold: .milliseconds(50)) {
            reports.add($0)
        }
        let queue = SerialQueue(label: "suspended-sync")
        watchdog.watch(queue)
        #expect(eventually { watchdog._isAsleep }, "the watchdog never went to sleep over an idle queue")
        queue.suspend()
        runThreads(2) { index in
            if index == 0 {
                queue.sync {}  // waits: suspended
            } else {
                #expect(reports.arrived.wait(timeout: .seconds(20)), "a sync call waiting on a suspended queue went unseen")
                queue.resume()
            }
        }
        watchdog.stop()
        #expect(reports.all.map(\.kind) == [.waiting])
    }

    @Test func aSyncBodyThatStallsIsReportedWithTheCallersThread() {
        let reports = Reports()
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(50), waitingThreshold: .seconds(60)) {
            reports.add($0)
        }
        let queue = SerialQueue(label: "slow-sync")
        watchdog.watch(queue)
        // Armed while idle, the queue makes sync go through the lock: the caller is known.
        #expect(eventually { watchdog._isAsleep }, "the watchdog never went to sleep over an idle queue")
        queue.sync {
            _ = reports.arrived.wait(timeout: .seconds(20))
        }
        watchdog.stop()
        #expect(reports.all.map(\.kind) == [.running])
        #expect(reports.all.first?.threadID == CurrentThread.systemID)
    }

    @Test func anIdleSetPutsTheWatchdogToSleepAndWorkWakesIt() {
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(20)) { _ in }
        let queue = SerialQueue(label: "sleepy")
        watchdog.watch(queue)
        #expect(eventually { watchdog._isAsleep }, "the watchdog kept looking at an idle queue")
        let looks = watchdog._lookCount
        queue.async {}
        #expect(eventually { watchdog._lookCount > looks }, "work on a watched queue did not wake the watchdog")
        #expect(eventually { watchdog._isAsleep }, "the watchdog did not go back to sleep")
        watchdog.stop()
    }

    /// Threads are counted by name, not in total: tests running beside this one start threads
    /// of their own, some for the life of the process (Swift's cooperative pool, shared pools).
    /// Checked by the threads' own kernel ids, not by counting threads named "StallWatchdog":
    /// other suites start and stop watchdogs beside this one.
    @Test func releasedQueuesAndAStoppedWatchdogLeaveNoThread() {
        let label = "gone-\(UInt16.random(in: 0...UInt16.max))"  // a kernel thread name holds 15 bytes
        let watchdogThread = LockedValue<Int32?>(nil)
        do {
            let watchdog = StallWatchdog(runningThreshold: .milliseconds(20), checkInterval: .milliseconds(1)) { _ in }
            watchdog._setLookHook { _ in  // a look runs on the watchdog's thread
                let id = CurrentThreadID.systemID
                watchdogThread.withLock { $0 = $0 ?? id }
            }
            let queue = SerialQueue(label: label)
            watchdog.watch(queue)
            queue.async {}
            queue.sync {}
            #expect(currentThreadNames().contains(label), "the queue's thread is not named by its label")
            #expect(eventually { watchdogThread.withLock { $0 } != nil }, "the watchdog never looked")
        }
        let watchdogID = watchdogThread.withLock { $0 } ?? -1
        #expect(
            eventually { !currentThreadNames().contains(label) && access("/proc/self/task/\(watchdogID)", F_OK) != 0 },
            "a thread outlived its watchdog or queue")
    }

    /// A look copies the watched set, unlocks, then arms each idle queue in its copy. A
    /// `stopWatching` that lands in between (it disarms the queue) must not be undone by the
    /// look: a queue armed for a watchdog that no longer watches it holds that watchdog alive,
    /// keeps its lock-free `sync` door closed and would wake it for nothing. The look is held at
    /// that point by a hook, so the race happens every time.
    @Test(arguments: QueueMode.allCases)
    func stopWatchingWhileALookIsUnderWayLeavesTheQueueUnarmed(mode: QueueMode) async {
        let watchdog = StallWatchdog(runningThreshold: .seconds(60), checkInterval: .milliseconds(1)) { _ in }
        let queue = mode.queue(label: "unwatched-\(mode)")
        let sampling = TestSemaphore()
        let proceed = TestSemaphore()
        let ended = TestSemaphore()
        let held = TestFlag()
        let (lookHeld, lookEnded) = await offThePool { () -> (Bool, Bool) in
            watchdog._setLookHook { phase in
                switch phase {
                case .willSample(let queues):
                    // Only the first look that copied the queue (an earlier one may have found none).
                    guard queues > 0, !held.isSet else { return }
                    held.set()
                    sampling.signal()
                    _ = proceed.wait(timeout: .seconds(30))
                case .ended:
                    if held.isSet { ended.signal() }  // the held look's end: looks run one at a time
                }
            }
            watchdog.watch(queue)  // wakes the watchdog: it looks within a millisecond
            guard sampling.wait(timeout: .seconds(20)) else { return (false, false) }
            watchdog.stopWatching(queue)
            proceed.signal()
            return (true, ended.wait(timeout: .seconds(20)))
        }
        #expect(lookHeld, "the watchdog never looked at the watched queue")
        #expect(lookEnded, "the held look never ended")
        #expect(!queue._isArmed(for: watchdog), "the look re-armed a queue its watchdog no longer watches")
        watchdog._setLookHook(nil)
        watchdog.stop()
        #expect(!queue._isArmed(for: watchdog), "a stopped watchdog is still armed on a queue")
    }
}
