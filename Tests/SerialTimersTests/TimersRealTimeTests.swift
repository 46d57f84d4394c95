import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// A few checks on a real SerialQueue and the real clock: never early, every timer fires, on its
/// queue. How late is not asserted here: on a loaded machine no bound holds (the virtual-time
/// tests prove the lateness bounds; `compare` measures real lateness).
@Suite("Timers in real time")
struct TimersRealTimeTests {
    @Test(arguments: QueueMode.allCases) func timersOnASerialQueueAreNeverEarly(mode: QueueMode) throws {
        let queue = mode.queue(label: "timers-real")
        let tick: Duration = .milliseconds(2)
        let timers = TimerService(scheduler: queue, tick: tick)
        let delays: [Duration] = [.milliseconds(1), .milliseconds(7), .milliseconds(20), .milliseconds(45), .milliseconds(130)]
        let lateness = CallbackRecorder<Duration>("timer lateness")
        let wrongQueue = TestCounter()
        for delay in delays {
            let deadline = MonotonicInstant.now() + delay
            _ = try? timers.schedule(at: deadline) {
                if !queue.isCurrent { wrongQueue.increment() }
                let now = MonotonicInstant.now()
                lateness.record(now - deadline)
            }
        }
        let observed = try lateness.wait(forCount: delays.count, timeout: .seconds(60))
        #expect(observed.count == delays.count)
        for late in observed {
            #expect(late >= .zero, "fired \(late) before its deadline")
        }
        #expect(wrongQueue.value == 0)
        timers.stop()
    }

    /// Tolerance zero on a real queue, with a busy-loop thread competing for the cores: every
    /// callback runs, at or after its deadline (on a quiet machine tens of microseconds after it:
    /// a figure of `compare`, not a bound a loaded machine keeps).
    @Test(arguments: QueueMode.allCases) func preciseTimersAreNeverEarlyUnderLoad(mode: QueueMode) throws {
        let queue = mode.queue(label: "timers-precise")
        let timers = TimerService(scheduler: queue, tick: .milliseconds(100))  // coarser than the bound: the deadline counts
        let count = 200
        let lateness = CallbackRecorder<Duration>("precise timer lateness")
        let observed = LockedValue<[Duration]>([])
        let done = TestFlag()
        runThreads(2) { index in
            guard index == 1 else {
                while !done.isSet {}  // a busy loop competing with the queue's worker for the cores
                return
            }
            defer { done.set() }
            var random = SeededRandom(seed: 24)
            for _ in 0..<count {
                let deadline = MonotonicInstant.now() + .microseconds(Int64.random(in: 500..<150_000, using: &random))
                _ = try? timers.schedule(at: deadline, tolerance: .zero) { lateness.record(MonotonicInstant.now() - deadline) }
            }
            let seen = (try? lateness.wait(forCount: count, timeout: .seconds(60))) ?? []
            observed.withLock { $0 = seen }
        }
        let seen = observed.withLock { $0 }
        #expect(seen.count == count, "\(seen.count) of \(count) precise timers ran within 60 s")
        #expect(seen.allSatisfy { $0 >= .zero }, "early by \(seen.filter { $0 < .zero })")
        timers.stop()
    }

    @Test(arguments: QueueMode.allCases) func aCancelledTimerDoesNotFireWhileAnotherOneDoes(mode: QueueMode) {
        let queue = mode.queue(label: "timers-cancel")
        let timers = TimerService(scheduler: queue)
        let fired = TestCounter()
        let done = TestSemaphore()
        let cancelled = try? timers.schedule(after: .milliseconds(10)) { fired.increment() }
        _ = try? timers.schedule(after: .milliseconds(30)) { done.signal() }
        #expect(cancelled?.cancel() == true)
        #expect(done.wait(timeout: .seconds(10)), "the 30 ms timer did not fire within 10 s")
        #expect(fired.value == 0)
    }

    @Test(arguments: QueueMode.allCases) func blockingOperationsOnWorkerQueuesFinishOrTimeOut(mode: QueueMode) {
        let callbacks = mode.queue(label: "timeouts-cb")
        let manager = TimeoutManager<String>(scheduler: callbacks, workerCount: 2, label: "to-real")
        let done = TestSemaphore()
        let outcomes = LockedValue<[String: String]>([:])
        let gate = TestSemaphore()
        _ = try? manager.run(taskKey: "fast", timeout: .seconds(20), operation: { "fast done" }) { outcome in
            outcomes.withLock { $0["fast"] = "\(outcome)" }
            done.signal()
        }
        // Blocks its worker until released, well after its 200 ms timeout.
        let started = TestFlag()
        _ = try? manager.run(taskKey: "slow", timeout: .milliseconds(200), operation: {
            started.set()
            _ = gate.wait(timeout: .seconds(10))
            return "slow done"
        }) { outcome in
            outcomes.withLock { $0["slow"] = "\(outcome)" }
            done.signal()
        }
        #expect(done.wait(timeout: .seconds(10)) && done.wait(timeout: .seconds(10)), "outcomes missing after 10 s")
        gate.signal()
        #expect(outcomes.withLock { $0 } == ["fast": "completed(fast done)", "slow": "timedOut"])
        // On a loaded machine the worker may reach the slow operation only after its deadline:
        // then it is skipped, never run; otherwise its result arrives late and is counted.
        #expect(
            eventually(timeout: .seconds(10)) {
                started.isSet ? manager.lateResultCount == 1 : manager.skippedOperationCount == 1
            }, "the late (or skipped) operation was not counted")
    }
}
