/// Probabilistic concurrency testing: the runnable thread with the highest priority runs;
/// `depth - 1` change points lower the running thread's priority below every other.
///
/// A thread gets its initial priority, a random value at least `depth`, the first time it is
/// seen runnable (threads are numbered in creation order, so this is deterministic). The
/// `i`-th change point (1-based) gives the highest runnable thread priority `depth - i`.
///
/// - Invariant: between two change points, whenever two threads are both runnable, the same
///   one of them is chosen.
package struct PCTPicker: SchedulePicker {
    private var random: ScheduleRandom
    private let depth: Int
    /// Scheduling points at which the priority of the thread about to run drops, ascending.
    package let changePoints: [Int]
    private var nextChange = 0
    private var priorities: [Int: UInt64] = [:]

    package init(seed: UInt64, depth: Int, expectedSteps: Int) {
        precondition(depth >= 1 && expectedSteps >= 1, "PCT needs depth ≥ 1 and expectedSteps ≥ 1")
        var random = ScheduleRandom(seed: seed)
        var points: [Int] = []
        for _ in 1..<depth { points.append(1 + Int(random.next(below: UInt64(expectedSteps)))) }
        self.changePoints = points.sorted()
        self.random = random
        self.depth = depth
    }

    package mutating func pick(among runnable: [Int], step: Int) -> Int {
        for id in runnable where self.priorities[id] == nil {
            // At least `depth`, so every change-point priority (below `depth`) is lower.
            self.priorities[id] = UInt64(self.depth) + (self.random.next() >> 2)
        }
        var chosen = self.highest(in: runnable)
        while self.nextChange < self.changePoints.count && self.changePoints[self.nextChange] <= step {
            self.nextChange += 1
            self.priorities[runnable[chosen]] = UInt64(self.depth - self.nextChange)
            chosen = self.highest(in: runnable)
        }
        return chosen
    }

    /// The index of the highest priority in `runnable` (the lower id on a tie).
    private func highest(in runnable: [Int]) -> Int {
        var best = 0
        for index in runnable.indices.dropFirst()
        where self.priorities[runnable[index]]! > self.priorities[runnable[best]]! {
            best = index
        }
        return best
    }
}
