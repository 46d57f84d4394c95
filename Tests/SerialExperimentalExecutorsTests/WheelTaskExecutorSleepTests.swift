import SerialCore
import SerialExperimentalExecutors
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// `Task.sleep` in a task that prefers a `WheelTaskExecutor` waits as a timer on its wheel, here
/// a `VirtualScheduler`'s: sleeps end only when the test advances virtual time, never on a real
/// sleep.
@Suite("WheelTaskExecutor: sleeps on the wheel")
struct WheelTaskExecutorSleepTests {
    /// A resumed sleeper's report: the virtual time it woke at and whether it ran on a pool thread.
    struct Wake: Sendable {
        let index: Int
        let at: MonotonicInstant
        let onPool: Bool
    }

    static func onPoolThread(_ label: String) -> Bool {
        CurrentThread.name(ofSystemID: CurrentThread.systemID).hasPrefix(label)
    }

    /// Virtual time and an executor whose delayed jobs wait on it (a 1 ns tick keeps deadlines exact).
    static func fixture(_ label: String, tick: Duration = .nanoseconds(1)) -> (VirtualScheduler, WheelTaskExecutor) {
        let scheduler = VirtualScheduler(label: label)
        let timers = TimerService(scheduler: scheduler, tick: tick)
        let executor = WheelTaskExecutor(threads: 2, label: label, timers: timers)
        return (scheduler, executor)
    }

    /// Starts a task preferring `executor` that sleeps until `deadline` (a virtual instant, given
    /// to `Task.sleep` as the `SuspendingClock` instant it converts to) and then reports.
    @discardableResult
    static func sleeper(
        _ index: Int, on executor: WheelTaskExecutor, scheduler: VirtualScheduler, until deadline: MonotonicInstant,
        tolerance: Duration? = nil, woke: CallbackRecorder<Wake>
    ) -> Task<Void, any Error> {
        Task(executorPreference: executor) {
            try await Task.sleep(until: deadline.suspendingInstant, tolerance: tolerance, clock: .suspending)
            woke.record(Wake(index: index, at: scheduler.now, onPool: Self.onPoolThread(executor.label)))
        }
    }

    static func waitUntilPending(_ count: Int, on timers: TimerService) async -> Bool {
        await eventually { timers.pendingCount == count }
    }

    @Test func aSleepWaitsOnTheWheelAndResumesOnAPoolThreadWhenVirtualTimePassesItsDeadline() async throws {
        let (scheduler, executor) = Self.fixture("wte-wheel")
        let woke = CallbackRecorder<Wake>("woke")
        let deadline = scheduler.now.advanced(by: .seconds(5))
        let task = Self.sleeper(0, on: executor, scheduler: scheduler, until: deadline, woke: woke)
        #expect(await Self.waitUntilPending(1, on: executor.timers), "the sleep armed no timer on the executor's wheel")
        scheduler.advance(to: deadline.advanced(by: .nanoseconds(-1)))
        #expect(executor.timers.pendingCount == 1, "the sleep's timer fired before its deadline")
        scheduler.advance(to: deadline)
        let wake = try await woke.wait(forCount: 1)[0]
        #expect(wake.at == deadline)
        #expect(wake.onPool, "the resumed task ran off the executor's pool")
        try await task.value
        executor.shutdown()
    }

    /// The two sleeps whose deadline is on `ContinuousClock`: `Task.sleep(for:)`, and (in 6.3.1)
    /// `Task.sleep(nanoseconds:)`.
    enum ContinuousSleep: CaseIterable, Sendable {
        case forDuration
        case nanoseconds

        func sleep(_ duration: Duration) async throws {
            switch self {
            case .forDuration: try await Task.sleep(for: duration)
            case .nanoseconds: try await Task.sleep(nanoseconds: UInt64(duration.components.seconds) * 1_000_000_000)
            }
        }
    }

    /// A `ContinuousClock` deadline becomes the delay left until it, counted from the service's
    /// `now`: the sleep ends within the moments between the sleep's clock read and the executor's.
    @Test(arguments: ContinuousSleep.allCases)
    func aContinuousClockSleepBecomesItsDelayOnTheWheel(_ kind: ContinuousSleep) async throws {
        let (scheduler, executor) = Self.fixture("wte-cont")
        let woke = CallbackRecorder<Wake>("woke")
        let start = scheduler.now
        let task = Task(executorPreference: executor) {
            try await kind.sleep(.seconds(5))
            woke.record(Wake(index: 0, at: scheduler.now, onPool: Self.onPoolThread("wte-cont")))
        }
        #expect(await Self.waitUntilPending(1, on: executor.timers), "the sleep armed no timer on the executor's wheel")
        scheduler.advance(to: start.advanced(by: .milliseconds(4_900)))
        #expect(executor.timers.pendingCount == 1, "a 5 s sleep ended within 4.9 s")
        scheduler.advance(to: start.advanced(by: .seconds(5)))
        let wake = try await woke.wait(forCount: 1)[0]
        #expect(wake.at > start.advanced(by: .milliseconds(4_900)) && wake.at <= start.advanced(by: .seconds(5)))
        #expect(wake.onPool)
        try await task.value
        executor.shutdown()
    }

    /// Deadlines given out of order end in deadline order, each at exactly its deadline.
    @Test func sleepersResumeInDeadlineOrderEachAtItsDeadline() async throws {
        let (scheduler, executor) = Self.fixture("wte-order")
        let woke = CallbackRecorder<Wake>("woke")
        let offsets = [7, 2, 9, 4, 1]
        let deadlines = offsets.map { scheduler.now.advanced(by: .seconds($0)) }
        let tasks = deadlines.enumerated().map {
            Self.sleeper($0.offset, on: executor, scheduler: scheduler, until: $0.element, woke: woke)
        }
        #expect(await Self.waitUntilPending(offsets.count, on: executor.timers))
        let order = deadlines.indices.sorted { deadlines[$0] < deadlines[$1] }
        for (step, index) in order.enumerated() {
            scheduler.advance(to: deadlines[index])
            let wakes = try await woke.wait(forCount: step + 1)
            #expect(wakes[step].index == index, "at \(offsets[index]) s, sleeper \(wakes[step].index) woke")
            #expect(wakes[step].at == deadlines[index])
            #expect(executor.timers.pendingCount == offsets.count - step - 1)
        }
        for task in tasks { try await task.value }
        executor.shutdown()
    }

    /// With a 1 ms tick: 10 ms of tolerance lets the service wait to the last tick of the window;
    /// no tolerance (`nil`) rounds the deadline up to its tick; `.zero` is precise between ticks.
    @Test func aSleepsToleranceIsTheTimersTolerance() async throws {
        let (scheduler, executor) = Self.fixture("wte-tol", tick: .milliseconds(1))
        let woke = CallbackRecorder<Wake>("woke")
        let start = scheduler.now
        let tolerantDeadline = start.advanced(by: .seconds(1))
        let tickDeadline = start.advanced(by: .microseconds(2_000_300))
        let preciseDeadline = start.advanced(by: .microseconds(3_000_300))
        let tasks = [
            Self.sleeper(
                0, on: executor, scheduler: scheduler, until: tolerantDeadline, tolerance: .milliseconds(10),
                woke: woke),
            Self.sleeper(1, on: executor, scheduler: scheduler, until: tickDeadline, woke: woke),
            Self.sleeper(2, on: executor, scheduler: scheduler, until: preciseDeadline, tolerance: .zero, woke: woke),
        ]
        #expect(await Self.waitUntilPending(3, on: executor.timers))
        scheduler.advance(to: tolerantDeadline.advanced(by: .milliseconds(9)))
        #expect(executor.timers.pendingCount == 3, "the tolerant sleep did not wait for the end of its window")
        scheduler.advance(to: tolerantDeadline.advanced(by: .milliseconds(10)))
        let tolerant = try await woke.wait(forCount: 1)[0]
        #expect(tolerant.index == 0 && tolerant.at == tolerantDeadline.advanced(by: .milliseconds(10)))
        scheduler.advance(to: tickDeadline)
        #expect(executor.timers.pendingCount == 2, "a sleep without tolerance ended between ticks")
        scheduler.advance(to: start.advanced(by: .milliseconds(2_001)))
        let ticked = try await woke.wait(forCount: 2)[1]
        #expect(ticked.index == 1 && ticked.at == start.advanced(by: .milliseconds(2_001)))
        scheduler.advance(to: preciseDeadline)
        let precise = try await woke.wait(forCount: 3)[2]
        #expect(precise.index == 2 && precise.at == preciseDeadline, "the precise sleep woke at \(precise.at)")
        for task in tasks { try await task.value }
        executor.shutdown()
    }

    /// What the runtime does on cancellation: the sleeping task resumes at once with
    /// `CancellationError`, but its wake-up job stays on the wheel until the deadline.
    @Test func aCancelledSleepEndsAtOnceButItsTimerWaitsForTheDeadline() async throws {
        let (scheduler, executor) = Self.fixture("wte-cancel")
        let deadline = scheduler.now.advanced(by: .seconds(60))
        let task = Task(executorPreference: executor) {
            try await Task.sleep(until: deadline.suspendingInstant, clock: .suspending)
        }
        #expect(await Self.waitUntilPending(1, on: executor.timers))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(executor.timers.pendingCount == 1, "the runtime's wake-up job left the wheel on cancellation")
        scheduler.advance(to: deadline)
        #expect(executor.timers.pendingCount == 0)
        executor.shutdown()
    }

    /// A timer the service refuses (it stopped) must not strand the sleeper: the job runs at once.
    @Test func aSleepTheServiceRefusesEndsAtOnceInsteadOfNever() async throws {
        let (_, executor) = Self.fixture("wte-refused")
        executor.timers.stop()
        let ended = CallbackRecorder<Bool>("sleep on a stopped service ended")
        let task = Task(executorPreference: executor) {
            ended.record((try? await Task.sleep(for: .seconds(3600))) != nil)
        }
        let outcome = try? await ended.wait(forCount: 1, timeout: .seconds(30))
        #expect(outcome == [true], "a sleep on a stopped service never ended (or threw)")
        task.cancel()  // so that the await below cannot hang when it never ended
        await task.value
        executor.pool.shutdown()
    }
}
