@testable import SerialCore

/// Properties every schedule picker must have, as functions that return what they saw wrong
/// (empty: none), so that tests can also show that a broken picker fails them.
enum SchedulePickerChecks {
    /// Made-up runnable sets: ascending ids from a pool of `threads`, never empty, fixed by `seed`.
    static func runnableSets(count: Int, threads: Int = 5, seed: UInt64 = 7) -> [[Int]] {
        var random = ScheduleRandom(seed: seed)
        return (0..<count).map { _ in
            let mask = 1 + random.next(below: (1 << UInt64(threads)) - 1)
            return (0..<threads).filter { mask & (1 << UInt64($0)) != 0 }
        }
    }

    /// Runs `picker` over `sets`, returning its answers (indices), stopping at the first out of range.
    static func answers(_ picker: inout some SchedulePicker, _ sets: [[Int]]) -> [Int] {
        var answers: [Int] = []
        for (step, set) in sets.enumerated() {
            let answer = picker.pick(among: set, step: step)
            answers.append(answer)
            if !(0..<set.count).contains(answer) { break }
        }
        return answers
    }

    /// Every answer is an index into its runnable set.
    static func picksOnlyRunnable(_ make: (UInt64) -> some SchedulePicker) -> [String] {
        let sets = Self.runnableSets(count: 2_000)
        var picker = make(1)
        let answers = Self.answers(&picker, sets)
        return zip(answers, sets).enumerated().compactMap { step, pair in
            (0..<pair.1.count).contains(pair.0) ? nil : "step \(step): picked index \(pair.0) of \(pair.1)"
        }
    }

    /// The same seed gives the same answers; different seeds differ somewhere.
    static func isDeterministicPerSeed(_ make: (UInt64) -> some SchedulePicker) -> [String] {
        let sets = Self.runnableSets(count: 500)
        var problems: [String] = []
        for seed: UInt64 in [0, 1, 42, 9_999] {
            var first = make(seed)
            var second = make(seed)
            if Self.answers(&first, sets) != Self.answers(&second, sets) {
                problems.append("seed \(seed): two pickers gave different answers")
            }
        }
        var one = make(1)
        var two = make(2)
        if Self.answers(&one, sets) == Self.answers(&two, sets) {
            problems.append("seeds 1 and 2 gave the same answers")
        }
        return problems
    }

    /// Uniform: over a fixed set of 3, each is picked within ±15 % of a third of 30,000 picks.
    static func isUniform(_ make: (UInt64) -> some SchedulePicker) -> [String] {
        var picker = make(3)
        var counts = [0, 0, 0]
        for step in 0..<30_000 {
            let answer = picker.pick(among: [0, 1, 2], step: step)
            guard (0..<3).contains(answer) else { return ["picked \(answer) of 3"] }
            counts[answer] += 1
        }
        return counts.allSatisfy { (8_500...11_500).contains($0) } ? [] : ["counts \(counts) are not uniform"]
    }

    /// PCT: with the runnable set fixed, the chosen thread changes at most `depth - 1` times
    /// (only a change point can lower the running thread), and with a short horizon it does
    /// change for some seed; with varying sets, between change points two threads that are both
    /// runnable are always ordered the same way.
    static func respectsPriorities(depth: Int, _ make: (UInt64, Int, Int) -> some SchedulePicker) -> [String] {
        var problems: [String] = []
        var someChange = false
        for seed: UInt64 in 0..<50 {
            var picker = make(seed, depth, 100)
            var previous: Int?
            var changes = 0
            for step in 0..<200 {
                let chosen = [0, 1, 2, 3][picker.pick(among: [0, 1, 2, 3], step: step)]
                if let previous, previous != chosen { changes += 1 }
                previous = chosen
            }
            if changes > depth - 1 { problems.append("seed \(seed): the running thread changed \(changes) times") }
            if changes > 0 { someChange = true }
        }
        if depth > 1 && !someChange { problems.append("no change point took effect in 50 seeds") }

        // Varying sets, no change points (depth 1): a strict total order.
        for seed: UInt64 in 0..<20 {
            var picker = make(seed, 1, 100)
            var preferred: [Pair: Int] = [:]
            for (step, set) in Self.runnableSets(count: 300, seed: seed).enumerated() {
                let chosen = set[picker.pick(among: set, step: step)]
                for other in set where other != chosen {
                    let pair = Pair(min(chosen, other), max(chosen, other))
                    if let winner = preferred[pair], winner != chosen {
                        problems.append(
                            "seed \(seed) step \(step): T\(chosen) ran before T\(winner), against their priorities")
                        return problems
                    }
                    preferred[pair] = chosen
                }
            }
        }
        return problems
    }

    struct Pair: Hashable {
        let low: Int
        let high: Int
        init(_ low: Int, _ high: Int) {
            self.low = low
            self.high = high
        }
    }
}

/// Deliberately wrong pickers: each must fail at least one check.
enum BrokenPickers {
    /// Ignores its seed: every run the same.
    struct IgnoresSeed: SchedulePicker {
        private var random = ScheduleRandom(seed: 12345)
        init(seed: UInt64) {}
        mutating func pick(among runnable: [Int], step: Int) -> Int {
            Int(self.random.next(below: UInt64(runnable.count)))
        }
    }

    /// Off by one: may answer one past the end.
    struct OffByOne: SchedulePicker {
        private var random: ScheduleRandom
        init(seed: UInt64) { self.random = ScheduleRandom(seed: seed) }
        mutating func pick(among runnable: [Int], step: Int) -> Int {
            Int(self.random.next(below: UInt64(runnable.count + 1)))
        }
    }

    /// Prefers the first runnable thread: not uniform.
    struct FavoursFirst: SchedulePicker {
        private var random: ScheduleRandom
        init(seed: UInt64) { self.random = ScheduleRandom(seed: seed) }
        mutating func pick(among runnable: [Int], step: Int) -> Int {
            self.random.next(below: 2) == 0 ? 0 : Int(self.random.next(below: UInt64(runnable.count)))
        }
    }

    /// Claims to be PCT but picks at random, ignoring priorities.
    struct FakePCT: SchedulePicker {
        private var random: ScheduleRandom
        init(seed: UInt64, depth: Int, expectedSteps: Int) { self.random = ScheduleRandom(seed: seed) }
        mutating func pick(among runnable: [Int], step: Int) -> Int {
            Int(self.random.next(below: UInt64(runnable.count)))
        }
    }

    /// PCT whose change points lower the thread to the wrong place: it keeps running.
    struct PCTWithoutChanges: SchedulePicker {
        private var inner: PCTPicker
        init(seed: UInt64, depth: Int, expectedSteps: Int) {
            self.inner = PCTPicker(seed: seed, depth: 1, expectedSteps: expectedSteps)
        }
        mutating func pick(among runnable: [Int], step: Int) -> Int { self.inner.pick(among: runnable, step: step) }
    }
}
