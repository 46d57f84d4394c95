/// What `TimerHandle.reschedule` did. When a reschedule races the timer's firing, exactly one
/// of the first two happens: the timer fires once, at the new deadline or at the old one.
public enum TimerReschedule: Hashable, Sendable {
    /// The timer waits for the new deadline and will not fire at the old one (or, re-armed
    /// from its own callback after it fired, fires once more, at the new one).
    case movedToNewDeadline
    /// Too late: the old deadline had come and the timer was handed (or is committed) to the
    /// scheduler; it fires (or fired) at the old deadline and the new one is ignored. A
    /// repeating timer keeps its schedule.
    case firedAtOldDeadline
    /// The timer had ended without firing (`.cancelled`, `.stopped`, `.schedulerShutDown`):
    /// it fires at neither deadline.
    case ended(TimerStatus)
}
