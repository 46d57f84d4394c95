import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// `WheelClock`: its epoch, and sleeping on virtual time through `VirtualScheduler.clock`.
@Suite("WheelClock")
struct WheelClockTests {
    @Test func monotonicInstantsAndSuspendingClockInstantsShareOneEpoch() {
        for _ in 0..<100 {
            let before = MonotonicInstant.now()
            let swift = SuspendingClock.now
            let after = MonotonicInstant.now()
            let converted = MonotonicInstant(swift)
            #expect(before <= converted && converted <= after, "SuspendingClock read \(converted), outside [\(before), \(after)]")
            #expect(MonotonicInstant(converted.suspendingInstant) == converted)
            #expect(converted.suspendingInstant == swift)
        }
        let instant = MonotonicInstant(nanoseconds: 5_000_000_123)
        #expect(SuspendingClock.Instant.now.duration(to: instant.suspendingInstant) < .zero)
        #expect(MonotonicInstant(instant.suspendingInstant.advanced(by: .nanoseconds(7))).nanoseconds == 5_000_000_130)
    }

    @Test func sleepersResumeInDeadlineOrderEachAtItsDeadlineWhenTheTestAdvances() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let start = clock.now
        let woke = CallbackRecorder<(Int, MonotonicInstant)>("woke")
        let delays = [30, 10, 20, 10]
        var tasks: [Task<Void, any Error>] = []
        for (index, delay) in delays.enumerated() {
            tasks.append(Task(executorPreference: TestTasks.executor) {
                try await clock.sleep(until: start + .milliseconds(delay))
                woke.record((index, clock.now))
            })
        }
        try await scheduler.waitUntilAsleep(4)
        scheduler.advance(by: .milliseconds(10) - .nanoseconds(1))
        #expect(scheduler.sleeperCount == 4, "a sleep ended before its deadline")
        scheduler.advance(by: .nanoseconds(1))
        // Both 10 ms sleeps ended during that advance, on this thread.
        #expect(scheduler.sleeperCount == 2)
        let first = try await woke.wait(forCount: 2)
        #expect(Set(first.map(\.0)) == [1, 3])
        #expect(first.allSatisfy { $0.1 == start + .milliseconds(10) })
        scheduler.advance(by: .milliseconds(10))
        #expect(try await woke.wait(forCount: 3).last.map { [$0.0] } == [2])
        scheduler.advance(by: .milliseconds(10))
        let all = try await woke.wait(forCount: 4)
        #expect(all.last?.0 == 0)
        #expect(all.last?.1 == start + .milliseconds(30))
        for task in tasks { try await task.value }
    }

    @Test func cancellingASleepingTaskFreesItsTimerAtOnceAndThrowsCancellationError() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let outcome = CallbackRecorder<String>("outcome")
        let task = Task(executorPreference: TestTasks.executor) {
            do {
                try await clock.sleep(for: .seconds(3600))
                outcome.record("woke")
            } catch {
                outcome.record(error is CancellationError ? "cancelled" : "\(error)")
            }
        }
        try await scheduler.waitUntilAsleep(1)
        #expect(clock.timers.pendingCount == 1)
        task.cancel()
        #expect(try await outcome.wait(forCount: 1) == ["cancelled"])
        #expect(clock.timers.pendingCount == 0, "the timer outlived the cancelled sleep")
        #expect(scheduler.sleeperCount == 0)
        scheduler.advance(by: .seconds(3600))
        #expect(outcome.values == ["cancelled"], "a cancelled sleep also woke")
    }

    @Test func aTaskCancelledBeforeItSleepsThrowsAndArmsNothing() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let task = Task(executorPreference: TestTasks.executor) {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.timers.pendingCount == 0)
        #expect(clock.timers.serviceStatistics.accepted == 0)
    }

    @Test func aSleepPendingWhenTheSchedulerShutsDownThrowsSchedulerShutDown() async throws {
        let scheduler = VirtualScheduler(label: "going")
        let clock = scheduler.clock
        let task = Task(executorPreference: TestTasks.executor) { try await clock.sleep(for: .seconds(60)) }
        try await scheduler.waitUntilAsleep(1)
        scheduler.shutdown()
        #expect(try await ending(of: task) == "\(TimerServiceError.schedulerShutDown(.shutDown(scheduler: "going")))")
        await #expect(throws: TimerServiceError.self) { try await clock.sleep(for: .seconds(1)) }
    }

    @Test func aSleepPendingWhenItsServiceStopsThrowsStopped() async throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let clock = WheelClock(timers: timers)
        let task = Task(executorPreference: TestTasks.executor) { try await clock.sleep(for: .seconds(60)) }
        #expect(await eventually(timeout: .seconds(120)) { timers.pendingCount == 1 }, "the sleep never armed its timer (its task never ran within 120 s?)")
        timers.stop()
        #expect(try await ending(of: task) == "\(TimerServiceError.stopped)")
    }

    @Test func waitingForSleepersThatNeverComeTimesOutNamingTheCount() async throws {
        let scheduler = VirtualScheduler(label: "empty")
        await #expect(throws: RecorderTimeout.self) {
            try await scheduler.waitUntilAsleep(2, timeout: .milliseconds(50))
        }
    }

    @Test func aSleepOnARealQueueNeverEndsEarly() async throws {
        let queue = SerialQueue(label: "wheel-clock")
        let clock = WheelClock(timers: TimerService(scheduler: queue))
        for delay in [1, 3, 7] {
            let deadline = clock.now + .milliseconds(delay)
            try await clock.sleep(until: deadline)
            let woke = MonotonicInstant.now()
            #expect(woke >= deadline, "woke \(deadline - woke) early")
        }
        try await WheelClock().sleep(for: .milliseconds(1))  // the shared service
    }

    /// How `task` ended, in words ("returned" or its error), waited for with a timeout so that
    /// a sleep nobody resumes fails the test instead of hanging it.
    func ending(of task: Task<Void, any Error>) async throws -> String {
        let ended = CallbackRecorder<String>("task ending")
        Task(executorPreference: TestTasks.executor) {
            do {
                try await task.value
                ended.record("returned")
            } catch {
                ended.record("\(error)")
            }
        }
        return try await ended.wait(forCount: 1, timeout: .seconds(120))[0]
    }
}

// The test clock's count of sleepers follows armed sleeps only.
extension WheelClockTests {
    /// A sleep whose deadline has passed is armed and counted like any other; cancelled sleeps
    /// and sleeps ended by a stop leave the count at zero, never negative.
    @Test func theSleeperCountFollowsArmedSleepsOnly() async throws {
        let scheduler = VirtualScheduler()
        let clock = scheduler.clock
        let ended = CallbackRecorder<String>("ended")
        let past = Task {
            do { try await clock.sleep(until: clock.now - .seconds(1)); ended.record("past") } catch { ended.record("past \(error)") }
        }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        scheduler.advance(by: .nanoseconds(1))  // a past deadline: the next tick (1 ns here)
        #expect(try await ended.wait(forCount: 1, timeout: .seconds(120)) == ["past"])
        #expect(scheduler.sleeperCount == 0)
        let sleeps = (0..<5).map { index in
            Task {
                do { try await clock.sleep(for: .seconds(10)) } catch { ended.record("cancelled \(index)") }
            }
        }
        try await scheduler.waitUntilAsleep(5, timeout: .seconds(120))
        for task in sleeps { task.cancel() }
        _ = try await ended.wait(forCount: 6, timeout: .seconds(120))
        #expect(scheduler.sleeperCount == 0)
        // Cancelled before it starts: never counted.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            do { try await clock.sleep(for: .seconds(1)) } catch { ended.record("early") }
        }
        _ = try await ended.wait(forCount: 7, timeout: .seconds(120))
        #expect(scheduler.sleeperCount == 0)
        let stopped = Task { do { try await clock.sleep(for: .seconds(1)) } catch { ended.record("stopped") } }
        try await scheduler.waitUntilAsleep(1, timeout: .seconds(120))
        _ = clock.timers.stop()
        _ = try await ended.wait(forCount: 8, timeout: .seconds(120))
        #expect(scheduler.sleeperCount == 0)
        #expect(scheduler.sleeperCount >= 0)
        _ = (past, early, stopped)
    }
}
