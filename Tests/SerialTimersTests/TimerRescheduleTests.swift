import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// Re-arming in place on virtual time: earlier and later, exactly one firing when the
/// re-arm races the fire, and no scheduler call when moving later.
@Suite("TimerService reschedule")
struct TimerRescheduleTests {
    @Test func movingLaterFiresOnlyAtTheNewDeadlineWithoutASchedulerCall() throws {
        let scheduler = InstrumentedScheduler()
        let timers = TimerService(scheduler: scheduler)
        let fired = LockedValue<[MonotonicInstant]>([])
        let start = scheduler.now
        let handle = try timers.schedule(after: .milliseconds(10)) { fired.withLock { $0.append(scheduler.now) } }
        for step in 1...100 {
            scheduler.base.advance(by: .milliseconds(5))
            let calls = scheduler.scheduleCalls
            #expect(handle.reschedule(after: .milliseconds(10)) == .movedToNewDeadline, "step \(step)")
            #expect(scheduler.scheduleCalls == calls, "moving later must not call the scheduler")
        }
        scheduler.base.advance(by: .milliseconds(9))
        #expect(fired.withLock { $0 }.isEmpty)
        scheduler.base.advance(by: .milliseconds(1))
        #expect(fired.withLock { $0 } == [start + .milliseconds(510)])
        #expect(handle.status == .fired)
        #expect(handle.deadline == start + .milliseconds(510))
    }

    @Test func movingEarlierArmsAnEarlierWakeUp() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        let fired = LockedValue<[MonotonicInstant]>([])
        let handle = try timers.schedule(after: .seconds(10)) { fired.withLock { $0.append(scheduler.now) } }
        #expect(handle.reschedule(at: start + .milliseconds(3)) == .movedToNewDeadline)
        scheduler.advance(by: .milliseconds(3))
        #expect(fired.withLock { $0 } == [start + .milliseconds(3)])
        scheduler.advance(by: .seconds(20))
        #expect(fired.withLock { $0 }.count == 1)
    }

    /// The race, made deterministic: two timers due in the same tick, one callback per turn.
    /// The first one's callback re-arms the second, which is due and committed: it fires
    /// once, at its old deadline, and the call says so.
    @Test func aReArmRacingTheFireGetsExactlyOneFiringAndSaysWhich() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, callbacksPerTurn: 1)
        let start = scheduler.now
        let fired = LockedValue<[MonotonicInstant]>([])
        let results = LockedValue<[TimerReschedule]>([])
        let box = LockedValue<TimerHandle?>(nil)
        try timers.schedule(after: .milliseconds(10)) {
            results.withLock { $0.append(box.withLock { $0 }!.reschedule(after: .milliseconds(50))) }
        }
        let second = try timers.schedule(after: .milliseconds(10)) { fired.withLock { $0.append(scheduler.now) } }
        box.withLock { $0 = second }
        scheduler.advance(by: .seconds(1))
        #expect(results.withLock { $0 } == [.firedAtOldDeadline])
        #expect(fired.withLock { $0 } == [start + .milliseconds(10)])
    }

    /// The other side of the race: re-armed from a callback of the same turn while it still
    /// waits in the wheel (due one tick later): it fires once, at the new deadline.
    @Test func aReArmJustBeforeTheFireMovesIt() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let start = scheduler.now
        let fired = LockedValue<[MonotonicInstant]>([])
        let box = LockedValue<TimerHandle?>(nil)
        let results = LockedValue<[TimerReschedule]>([])
        try timers.schedule(after: .milliseconds(10)) {
            results.withLock { $0.append(box.withLock { $0 }!.reschedule(after: .milliseconds(50))) }
        }
        let second = try timers.schedule(after: .milliseconds(11)) { fired.withLock { $0.append(scheduler.now) } }
        box.withLock { $0 = second }
        scheduler.advance(by: .seconds(1))
        #expect(results.withLock { $0 } == [.movedToNewDeadline])
        #expect(fired.withLock { $0 } == [start + .milliseconds(60)])
    }

    @Test func reArmingAnEndedTimerSaysHowItEnded() throws {
        let scheduler = VirtualScheduler(label: "virtual")
        let timers = TimerService(scheduler: scheduler)
        let fired = try timers.schedule(after: .milliseconds(1)) {}
        let cancelled = try timers.schedule(after: .seconds(1)) {}
        let dropped = try timers.schedule(after: .seconds(1)) {}
        scheduler.advance(by: .milliseconds(1))
        cancelled.cancel()
        #expect(fired.reschedule(after: .seconds(1)) == .firedAtOldDeadline)
        #expect(cancelled.reschedule(after: .seconds(1)) == .ended(.cancelled))
        scheduler.shutdown()
        let reason = SchedulingError.shutDown(scheduler: "virtual")
        #expect(dropped.reschedule(after: .seconds(1)) == .ended(.schedulerShutDown(reason)))
        #expect(timers.pendingCount == 0)
    }

    /// Ten thousand idle timeouts pushed back on traffic: only the silent ones time out, on time.
    @Test func idleTimeoutsReArmedOnTrafficOnlyTheSilentOnesFire() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler)
        let timedOut = LockedValue<[Int]>([])
        let handles = try (0..<10_000).map { id in
            try timers.schedule(after: .milliseconds(100)) { timedOut.withLock { $0.append(id) } }
        }
        for _ in 0..<20 {
            scheduler.advance(by: .milliseconds(50))
            for (id, handle) in handles.enumerated() where id % 1_000 != 0 {
                #expect(handle.reschedule(after: .milliseconds(100)) == .movedToNewDeadline)
            }
        }
        #expect(timedOut.withLock { $0 }.sorted() == Array(stride(from: 0, to: 10_000, by: 1_000)))
        #expect(timers.pendingCount == 9_990)
    }

    @Test func aTimeoutTasksDeadlineCanBeExtended() throws {
        let scheduler = VirtualScheduler()
        let manager = TimeoutManager<Int>(scheduler: scheduler, workers: [scheduler])
        let outcomes = LockedValue<[String]>([])
        let pending = LockedValue<[TimeoutCompletion<Int>]>([])
        try manager.start(timeout: .seconds(1), operation: { c in pending.withLock { $0.append(c) } }) { outcome in
            outcomes.withLock { $0.append("\(outcome)") }
        }
        let completion = pending.withLock { $0[0] }
        scheduler.advance(by: .milliseconds(800))
        #expect(completion.extendDeadline(after: .seconds(1)))
        scheduler.advance(by: .milliseconds(900))
        #expect(outcomes.withLock { $0 }.isEmpty, "the old deadline (1 s) passed without a timeout")
        scheduler.advance(by: .milliseconds(100))
        #expect(outcomes.withLock { $0 } == ["timedOut"])
        #expect(completion.extendDeadline(after: .seconds(1)) == false)
    }
}

// Re-arming from the callback: a re-arm keeps or drops precision as the pending path does.
extension TimerRescheduleTests {
    /// A default timer (tick 100 ms) made precise from its callback stays precise through later
    /// re-arms with `nil`, and one given a tick or more goes back to the wheel: every firing on
    /// the promised instant.
    @Test func reArmsFromTheCallbackKeepOrDropPrecisionAsThePendingPathDoes() throws {
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: .milliseconds(100))
        let start = scheduler.now
        let fired = LockedValue<[Duration]>([])
        let box = LockedValue<TimerHandle?>(nil)
        // (delay, tolerance) for each re-arm after the n-th firing.
        let plan: [(Duration, Duration?)] = [
            (.milliseconds(10), .zero), (.milliseconds(15), nil), (.milliseconds(20), nil),
            (.milliseconds(30), .milliseconds(200)), (.milliseconds(30), nil),
        ]
        let handle = try timers.schedule(after: .milliseconds(100)) {
            let count = fired.withLock { fired in
                fired.append(start.duration(to: scheduler.now))
                return fired.count
            }
            guard count <= plan.count, let handle = box.withLock({ $0 }) else { return }
            let (delay, tolerance) = plan[count - 1]
            #expect(handle.reschedule(after: delay, tolerance: tolerance) == .movedToNewDeadline)
        }
        box.withLock { $0 = handle }
        scheduler.advance(by: .seconds(2))
        // 100; +10 = 110 precise; +15 = 125; +20 = 145; +30 with a wide window: the wheel's
        // one tick, due 175 -> tick 200; +30 = 230 -> tick 300.
        #expect(fired.withLock { $0 } == [100, 110, 125, 145, 200, 300].map { .milliseconds($0) })
        #expect(timers.pendingCount == 0)
    }
}
