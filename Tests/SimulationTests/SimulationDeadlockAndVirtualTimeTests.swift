#if SERIAL_SIMULATION
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// The simulator's promises: a run no thread can continue is a deadlock naming every thread's
/// wait, and time is virtual (timed waits jump it; an hour of timers takes no real time).
@Suite(.serialized) struct SimulationDeadlockAndVirtualTimeTests {
    @Test func aConditionNeverSignalledIsADeadlockNamingTheThread() async {
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 0) { Mailbox().take() }
        }
        #expect(result.failure?.kind == "deadlock")
        #expect(result.failure?.report.contains("T0 \"main\": waits on condition") == true, "\(result.failure?.report ?? "")")
    }

    /// Lock-order inversion through sync: the scenario holds a mutex and syncs into a queue whose
    /// earlier work wants that mutex.
    @Test func aLockOrderInversionThroughSyncIsADeadlockNamingBothThreads() async {
        let report = await offThePool {
            Simulation(strategy: .random).explore(seeds: 0..<20) {
                let mutex = SendableMutex()
                let queue = SerialQueue(label: "atk-inv")
                mutex.lock()
                queue.async { mutex.withLock {} }
                queue.sync {}
                mutex.unlock()
            }
        }
        let kinds = Set(report.results.map { $0.failure?.kind ?? "passed" })
        #expect(kinds == ["deadlock"], "\(kinds)")
        let text = report.failures.first?.failure?.report ?? ""
        #expect(text.contains("T0 \"main\"") && text.contains("atk-inv") && text.contains("wants mutex"), "\(text)")
        print("attack lock-order inversion report:\n\(text)")
    }

    /// Two queues syncing into each other from their workers: the runtime's wait graph traps
    /// (`Misuse`), and the simulator must print the replay line.
    @Test func twoQueuesSyncingIntoEachOtherTrapWithAReplayLine() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let report = Simulation(strategy: .random).explore(seeds: 0..<50) {
                let a = SerialQueue(label: "atk-a")
                let b = SerialQueue(label: "atk-b")
                a.async { b.sync { _ = MonotonicInstant.now() } }
                b.async { a.sync { _ = MonotonicInstant.now() } }
                a.sync {}
                b.sync {}
            }
            // No seed closed the cycle: end as a failure anyway so the check below reports it.
            print("no cycle in \(report.results.count) seeds")
            exit(3)
        }
        let text = result?.standardErrorText ?? ""
        #expect(text.contains("simulation failed (trap") && text.contains("replay: sim1:random:"), "\(text)")
        print("attack sync cycle: \(text.split(separator: "\n").filter { $0.contains("replay:") || $0.contains("atk-") }.prefix(4))")
    }

    @Test func aTimedWaitJumpsVirtualTimeAndAnHourOfTimersTakesNoRealTime() async {
        let started = ContinuousClock.now
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 4) {
                let queue = SerialQueue(label: "atk-hour")
                let done = Mailbox()
                _ = queue.asyncAfter(delay: .seconds(3_600)) { done.post() }
                done.take()
                let mutex = PthreadMutex()
                let never = PthreadCondition()
                mutex.lock()
                never.wait(releasing: mutex, until: MonotonicInstant.now().advanced(by: .seconds(7_200)))
                mutex.unlock()
            }
        }
        let elapsed = ContinuousClock.now - started
        #expect(result.passed, "\(result.failure?.description ?? "")")
        #expect(result.virtualTime >= .seconds(10_800), "\(result.virtualTime)")
        #expect(elapsed < .seconds(5), "\(elapsed)")
    }

    /// A TimerService heartbeat every second for an hour (3,600 callbacks) on virtual time.
    @Test func aTimerServiceHeartbeatForAnHourCompletesQuickly() async {
        let started = ContinuousClock.now
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 4) {
                let queue = SerialQueue(label: "atk-beat")
                let timers = TimerService(scheduler: queue)
                let done = Mailbox()
                let count = Atomic<Int>(0)
                for second in 1...60 {
                    _ = try? timers.schedule(after: .seconds(second * 60)) {
                        if count.add(1, ordering: .relaxed).newValue == 60 { done.post() }
                    }
                }
                done.take()
                _ = timers.stop()
            }
        }
        let elapsed = ContinuousClock.now - started
        #expect(result.passed, "\(result.failure?.description ?? "")")
        #expect(elapsed < .seconds(10), "\(elapsed), \(result.steps) steps, virtual \(result.virtualTime)")
        print("attack heartbeat: \(elapsed) real, \(result.virtualTime) virtual, \(result.steps) steps")
    }
}
#endif
