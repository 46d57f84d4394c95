#if SERIAL_SIMULATION
import SerialTestSupport
import SerialTesting
import Testing

@testable import SerialCore

/// A structure with a registered invariant: broken while `broken` is set, guarded by `mutex`.
private final class Guarded: @unchecked Sendable {  // simulated threads only, one at a time
    let mutex = PthreadMutex()
    var broken = false

    init(guarded: Bool) {
        SimulationRun.registerInvariant("test invariant", of: self, guardedBy: guarded ? self.mutex : nil) {
            $0.broken ? "broken on purpose" : nil
        }
    }
}

/// When the kernel checks registered invariants (`SimulationInvariant`).
@Suite struct SimulationInvariantTests {
    @Test func aGuardedInvariantIsNotCheckedWhileItsMutexIsHeld() async {
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 1) {
                let guarded = Guarded(guarded: true)
                guarded.mutex.lock()
                guarded.broken = true
                _ = MonotonicInstant.now()  // a scheduling point inside the critical section
                guarded.broken = false
                guarded.mutex.unlock()
            }
        }
        #expect(result.passed, "\(result.failure?.description ?? "")")
    }

    @Test func aBrokenInvariantEndsTheRunAtTheNextSchedulingPointAndReplays() async throws {
        let scenario: @Sendable () -> Void = {
            let guarded = Guarded(guarded: true)
            guarded.mutex.withLock { guarded.broken = true }  // left broken once the mutex is free
            _ = MonotonicInstant.now()
            Simulation.check(false, "the run went on past a broken invariant")
        }
        let (result, replay) = await offThePool { () -> (SimulationResult, SimulationResult?) in
            let result = Simulation(strategy: .random).run(seed: 2, scenario)
            return (result, result.failure.map { _ in Simulation.replay(result.token, scenario) })
        }
        let failure = try #require(result.failure)
        #expect(failure.kind == "invariant")
        #expect(failure.report == "invariant \"test invariant\" broken: broken on purpose")
        #expect(failure.replayLine.contains("simulation failed (invariant)") && failure.replayLine.contains("replay: "))
        #expect(replay?.traceHash == result.traceHash && replay?.failure?.report == failure.report)
    }

    @Test func anUnguardedInvariantIsCheckedEvenWhileAMutexIsHeld() async {
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 3) {
                let guarded = Guarded(guarded: false)
                guarded.mutex.lock()
                guarded.broken = true
                _ = MonotonicInstant.now()
                guarded.broken = false
                guarded.mutex.unlock()
            }
        }
        #expect(result.failure?.kind == "invariant")
    }
}
#endif
