#if SERIAL_SIMULATION
/// One scheduling point of a run: the trace hash after the pick, and the thread picked.
package struct SimulationStepMark: Equatable, Sendable {
    let hash: UInt64
    let thread: Int
}

extension SimulationOutcome {
    /// This run's outcome, checked against `again`, a second run of the same seed and strategy:
    /// unchanged when both took the same path (equal trace hashes); otherwise a failure of kind
    /// `nondeterministic` naming the first scheduling point where the two runs differ, with this
    /// run's failure after it. Both runs must have recorded their steps.
    package func comparedWith(_ again: SimulationOutcome) -> SimulationOutcome {
        guard self.traceHash != again.traceHash || self.failure?.kind != again.failure?.kind else { return self }
        let common = min(self.stepMarks.count, again.stepMarks.count)
        let first = (0..<common).first { self.stepMarks[$0] != again.stepMarks[$0] } ?? common
        func describe(_ marks: [SimulationStepMark]) -> String {
            first < marks.count ? "T\(marks[first].thread) ran" : "the run had ended"
        }
        let original = self.failure.map { "\($0.kind.rawValue) at step \($0.step): \($0.message)" } ?? "passed"
        let message = "the same seed ran twice took two paths: they differ from scheduling point \(first) "
            + "(first run: \(describe(self.stepMarks)), second run: \(describe(again.stepMarks))). Something "
            + "outside the scheduler's control steered it: real time (ContinuousClock.now, Date), state kept "
            + "from an earlier run, or a thread or task outside the run. The first run: \(original)"
        var checked = self
        checked.failure = SimulationFailure(kind: .nondeterministic, message: message, step: first, token: self.token)
        return checked
    }
}
#endif
