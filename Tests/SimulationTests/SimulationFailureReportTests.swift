#if SERIAL_SIMULATION
import Glibc
import SerialRuntime
import SerialTestSupport
import SerialTesting
import Synchronization
import Testing

@testable import SerialCore

/// The simulator's promise: every failure of a scenario's own code (a trap, a crash) ends with
/// the replay line, and the line replays.
@Suite(.serialized) struct SimulationFailureReportTests {
    /// A Swift Testing `#expect` inside a scenario runs on a simulated pthread: the simulator
    /// does not see it (the run passes); what does Swift Testing do with it?
    @Test(.disabled(if: getenv("ATTACK31_OBSERVE") == nil, "observation: an #expect inside a scenario; see the report"))
    func expectInsideAScenario() async {
        let result = await offThePool {
            Simulation(strategy: .random).run(seed: 0) {
                let queue = SerialQueue(label: "atk-expect")
                queue.sync { #expect(1 == 2, "an #expect inside a simulated run") }
            }
        }
        print("attack #expect inside scenario: run passed=\(result.passed)")
    }

    /// A trap in work on a pooled queue: the replay line names the seed, and replaying the
    /// printed token traps again with the same line.
    @Test func aTrapInPooledWorkPrintsAReplayLineThatReplays() async throws {
        let scenario: @Sendable () -> Void = {
            let pool = WorkerPool(threads: 2, label: "atk-trap-pool")
            let queue = SerialQueue(label: "atk-trap", pool: pool)
            let other = SerialQueue(label: "atk-trap2", pool: pool)
            other.async { _ = MonotonicInstant.now() }
            queue.async { _ = MonotonicInstant.now(); fatalError("attack: trap in pooled work") }
            other.sync {}
            queue.sync {}
        }
        let first = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Simulation(strategy: .random).run(seed: 6) {
                let pool = WorkerPool(threads: 2, label: "atk-trap-pool")
                let queue = SerialQueue(label: "atk-trap", pool: pool)
                let other = SerialQueue(label: "atk-trap2", pool: pool)
                other.async { _ = MonotonicInstant.now() }
                queue.async { _ = MonotonicInstant.now(); fatalError("attack: trap in pooled work") }
                other.sync {}
                queue.sync {}
            }
        }
        _ = scenario
        let text = first?.standardErrorText ?? ""
        let line = try #require(text.split(separator: "\n").first { $0.contains("replay: sim1:") }, "\(text)")
        let token: String = String(String(line).split(separator: " ").last!)
        #expect(text.contains("attack: trap in pooled work"))
        let again = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [token = token as String] in
            _ = Simulation.replay(token) {
                let pool = WorkerPool(threads: 2, label: "atk-trap-pool")
                let queue = SerialQueue(label: "atk-trap", pool: pool)
                let other = SerialQueue(label: "atk-trap2", pool: pool)
                other.async { _ = MonotonicInstant.now() }
                queue.async { _ = MonotonicInstant.now(); fatalError("attack: trap in pooled work") }
                other.sync {}
                queue.sync {}
            }
        }
        let replayed = again?.standardErrorText ?? ""
        let replayLine = replayed.split(separator: "\n").first { $0.contains("replay: sim1:") }
        print("attack trap line: \(line)\nattack trap replay line: \(replayLine ?? "none")")
        #expect(replayLine.map { String($0).hasSuffix(token) } == true, "\(replayed)")
        #expect(replayLine.map { $0.contains("at step") && line.contains("at step") ? $0 == line : true } == true)
    }

    /// A crash by stack overflow on a simulated thread: the docs promise the replay line for "a
    /// crash" too. The handler is installed without an alternate stack.
    @Test
    func aStackOverflowOnASimulatedThreadPrintsTheReplayLine() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Simulation(strategy: .random).run(seed: 1) {
                let queue = SerialQueue(label: "atk-overflow")
                queue.sync { _ = recurseUntilTheStackOverflows(1) }
            }
        }
        let text = result?.standardErrorText ?? ""
        print("attack stack overflow: exit \(String(describing: result?.exitStatus)); stderr bytes \(result?.standardErrorContent.count ?? -1): \(text.suffix(400).debugDescription)")
        #expect(text.contains("simulation failed (trap, signal") && text.contains("replay: sim1:random:1:"), "\(text.suffix(400))")
    }
}
#endif
