/// Chooses one of the runnable threads at a scheduling point. Pure: no threads, no clock.
///
/// `runnable` holds the ids of the threads that may run, ascending and never empty; the answer
/// is an index into it. A picker is deterministic: its choices follow from its seed and the
/// sequence of runnable sets it was shown.
package protocol SchedulePicker {
    /// The index in `runnable` of the thread to run at scheduling point `step` (0, 1, 2, … over
    /// the whole run, counting the points where only one thread could run).
    mutating func pick(among runnable: [Int], step: Int) -> Int
}

/// Uniform random choice among the runnable threads.
package struct RandomPicker: SchedulePicker {
    private var random: ScheduleRandom

    package init(seed: UInt64) {
        self.random = ScheduleRandom(seed: seed)
    }

    package mutating func pick(among runnable: [Int], step: Int) -> Int {
        Int(self.random.next(below: UInt64(runnable.count)))
    }
}

/// SplitMix64: a whole sequence fixed by its seed, cheap enough for every scheduling point.
package struct ScheduleRandom {
    private var state: UInt64

    package init(seed: UInt64) {
        self.state = seed
    }

    package mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (Lemire's multiply-shift; the tiny bias is irrelevant here).
    package mutating func next(below bound: UInt64) -> UInt64 {
        precondition(bound > 0, "ScheduleRandom.next(below:) needs a positive bound")
        return self.next().multipliedFullWidth(by: bound).high
    }
}
