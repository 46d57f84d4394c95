/// The pure heart of a simulation: at each scheduling point it is shown the runnable threads
/// and names the one that runs next. It drives no thread and reads no clock, so it is tested
/// on its own (`SimulationSchedulerTests`) with made-up runnable sets.
///
/// Fresh, it asks its strategy's picker and records every choice with more than one option;
/// given a token, it replays the recorded choices instead and notices if the run leaves them.
package struct SimulationScheduler {
    package let strategy: ScheduleStrategy
    package let seed: UInt64
    private var picker: any SchedulePicker
    private var replay: ScheduleRecord.Reader?
    /// What this run chose where it had a choice.
    package private(set) var record = ScheduleRecord()
    /// Scheduling points so far, single-option ones included.
    package private(set) var steps = 0
    /// Why a replay stopped following its record (then the strategy's picker took over).
    package private(set) var divergence: String?

    /// A scheduler that explores: `strategy` from `seed`.
    package init(strategy: ScheduleStrategy, seed: UInt64) {
        self.strategy = strategy
        self.seed = seed
        self.picker = Self.makePicker(strategy, seed: seed)
    }

    /// A scheduler that replays `token`'s choices.
    package init(replaying token: ScheduleToken) {
        self.init(strategy: token.strategy, seed: token.seed)
        self.replay = ScheduleRecord.Reader(token.record)
    }

    /// A scheduler that asks `picker` (tests use this to check pickers, good and broken).
    package init(picker: any SchedulePicker, strategy: ScheduleStrategy = .random, seed: UInt64 = 0) {
        self.strategy = strategy
        self.seed = seed
        self.picker = picker
    }

    private static func makePicker(_ strategy: ScheduleStrategy, seed: UInt64) -> any SchedulePicker {
        switch strategy {
        case .random: return RandomPicker(seed: seed)
        case .pct(let depth, let steps): return PCTPicker(seed: seed, depth: depth, expectedSteps: steps)
        }
    }

    /// The id of the thread to run next.
    ///
    /// - Precondition: `runnable` is non-empty and ascending.
    package mutating func next(among runnable: [Int]) -> Int {
        precondition(!runnable.isEmpty, "SimulationScheduler.next: no runnable thread")
        defer { self.steps += 1 }
        guard runnable.count > 1 else { return runnable[0] }
        var choice: Int
        if self.replay != nil && self.divergence == nil, let recorded = self.replay!.next(of: runnable.count) {
            choice = recorded
        } else {
            if self.replay != nil && self.divergence == nil {
                self.divergence = "the recorded schedule ended or did not fit at decision "
                    + "\(self.record.decisions + 1) (step \(self.steps), \(runnable.count) runnable)"
            }
            choice = self.picker.pick(among: runnable, step: self.steps)
        }
        // A picker that answers out of range is a bug in the picker, not in the code under test.
        if !(0..<runnable.count).contains(choice) {
            fatalError("SimulationScheduler: picker chose \(choice) of \(runnable.count) runnable threads")
        }
        self.record.append(choice: choice, of: runnable.count)
        return runnable[choice]
    }

    /// Whether a replay consumed exactly its record (always `true` when exploring).
    package var replayedWholly: Bool {
        guard let replay = self.replay else { return true }
        return self.divergence == nil && replay.isComplete
    }

    /// The token that replays this run's choices so far.
    package var token: ScheduleToken {
        ScheduleToken(strategy: self.strategy, seed: self.seed, record: self.record)
    }
}
