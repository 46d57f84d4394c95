/// How a simulation picks the thread that runs next at each scheduling point.
///
/// Pure data: the same strategy and seed give the same choices for the same runnable sets.
package enum ScheduleStrategy: Hashable, Sendable {
    /// Every runnable thread is equally likely at every point: many short preemptions.
    case random
    /// Probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010): random distinct
    /// priorities, the highest-priority runnable thread runs, and at `depth - 1` points drawn
    /// from `1...expectedSteps` the running thread drops below every other. A bug that needs
    /// `depth - 1` preemptions at the right places is found with probability at least
    /// 1 / (threads × expectedSteps^(depth - 1)) per run.
    case pct(depth: Int, expectedSteps: Int)

    /// The deepest PCT accepted: each level is a change point drawn per run, and bugs that need
    /// more than a handful of preemptions are out of PCT's reach anyway.
    package static let maximumPCTDepth = 64

    /// PCT with a step horizon that suits the scenarios of this package (a few thousand points).
    package static func pct(depth: Int) -> ScheduleStrategy { .pct(depth: depth, expectedSteps: 2_000) }

    /// The short name used in schedule tokens and failure lines: `random`, `pct3`, `pct3x500`.
    package var name: String {
        switch self {
        case .random: return "random"
        case .pct(let depth, let steps):
            return steps == 2_000 ? "pct\(depth)" : "pct\(depth)x\(steps)"
        }
    }

    /// Parses `name`'s form; `nil` for anything else.
    package init?(name: String) {
        if name == "random" {
            self = .random
            return
        }
        guard name.hasPrefix("pct") else { return nil }
        let parts = name.dropFirst(3).split(separator: "x", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let depth = Int(parts[0]), (1...Self.maximumPCTDepth).contains(depth)
        else { return nil }
        var steps = 2_000
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), parsed >= 1 else { return nil }
            steps = parsed
        }
        self = .pct(depth: depth, expectedSteps: steps)
    }
}
