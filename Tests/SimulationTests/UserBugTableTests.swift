#if SERIAL_SIMULATION
import Foundation
import SerialTestSupport
import SerialTesting
import Testing

/// The article's table of user bugs: each buggy scenario found within 500 seeds and its failure
/// replayed identically 10 times of 10; each fixed scenario passes the first 50 seeds, or all
/// 500 with `SERIAL_SIMULATION_USER_BUGS=1`.
@Suite struct UserBugTableTests {
    static let requested = ProcessInfo.processInfo.environment["SERIAL_SIMULATION_USER_BUGS"]
    static let seeds: UInt64 = 500
    static let fixedSeeds: UInt64 = Self.requested == "1" ? 500 : 50
    static let replays = 10

    @Test(.serialized, arguments: UserBugs.all.map(\.name))  // one at a time: each row's seconds are its own
    func theBugIsFoundAndReplayedAndItsFixPassesEverySeed(name: String) async throws {
        let bug = try #require(UserBugs.all.first { $0.name == name })
        let row = await offThePool { Self.hunt(bug) }
        print(row.line)
        let found = try #require(row.found, "\(name): not found in \(Self.seeds) schedules")
        #expect(found.identicalReplays == Self.replays, "\(row.line)")
        #expect(row.fixedFailures.isEmpty, "the fixed version failed: \(row.fixedFailures)")
    }

    struct Row: Sendable {
        struct Found: Sendable {
            let schedules: UInt64
            let seconds: Double
            let kind: String
            let token: String
            let identicalReplays: Int
        }
        let name: String
        let found: Found?
        let fixedFailures: [String]
        let fixedSeconds: Double

        /// `| name | schedules to find | seconds | replayed | fixed: seeds passed |`
        var line: String {
            let found = self.found.map {
                "\($0.schedules) | \(String(format: "%.2f", $0.seconds)) | \($0.identicalReplays)/\(UserBugTableTests.replays) (\($0.kind))"
            } ?? "not found | — | —"
            return "user bug | \(self.name) | \(found) | fixed: \(Int(UserBugTableTests.fixedSeeds) - self.fixedFailures.count)/"
                + "\(UserBugTableTests.fixedSeeds) passed in \(String(format: "%.1f", self.fixedSeconds)) s |"
        }
    }

    static func hunt(_ bug: UserBug) -> Row {
        let simulation = Simulation(strategy: bug.strategy)
        let started = ContinuousClock.now
        var found: Row.Found?
        for seed in 0..<Self.seeds {
            let result = simulation.run(seed: seed, bug.buggy)
            guard let failure = result.failure else { continue }
            let seconds = (ContinuousClock.now - started).seconds
            let identical = (0..<Self.replays).filter { _ in
                let replay = Simulation.replay(result.token, bug.buggy)
                return replay.traceHash == result.traceHash && replay.failure?.report == failure.report
            }.count
            found = Row.Found(schedules: seed + 1, seconds: seconds, kind: failure.kind, token: result.token,
                identicalReplays: identical)
            break
        }
        let fixedStarted = ContinuousClock.now
        let fixed = simulation.explore(bug.name, seeds: 0..<Self.fixedSeeds, bug.fixed)
        let failures = fixed.failures.map { "seed \($0.seed): \($0.failure!.description)" }
        return Row(name: bug.name, found: found, fixedFailures: failures,
            fixedSeconds: (ContinuousClock.now - fixedStarted).seconds)
    }
}

extension Duration {
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
#endif
