@_spi(SerialSeam) import SerialCore
import Synchronization

/// What one `withWheelDeadline` call shares between its timer and its child task: the child
/// task while it runs, and how the deadline ended.
///
/// The timer cancels the child through `UnsafeCurrentTask.cancel()` (the runtime's
/// cancellation, the same call `Task.cancel()` makes, safe from any thread) while holding the
/// lock, and the child leaves under the same lock before it returns: so the task is alive
/// whenever it is cancelled.
final class WheelDeadlineWatch: Sendable {
    /// How the deadline's timer ended, as far as the operation is concerned.
    enum Ending {
        /// Not at all yet (or it was cancelled after the operation finished).
        case running
        /// The deadline passed: the operation was cancelled.
        case expired
        /// The service ended the timer without firing: the operation was cancelled.
        case timerEndedUnrun
    }

    /// The child task, cancelled only under the lock while it has not left (see above).
    private struct ChildTask: @unchecked Sendable {
        let task: UnsafeCurrentTask
    }

    /// When the calling task was cancelled, as far as the deadline is concerned.
    enum CallerCancellation {
        /// Before the deadline: the caller's own cancellation, not this deadline.
        case beforeDeadline
        /// Once the deadline had passed (an outer deadline fired in the same wake-up, say).
        case atOrAfterDeadline
    }

    private struct State {
        var ending = Ending.running
        var child: ChildTask? = nil
        var left = false
        var callerCancellation: CallerCancellation? = nil
    }

    private let state = LockedValue(State())

    var ending: Ending { self.state.withLock { $0.ending } }

    /// When the calling task was cancelled (its first cancellation), or `nil` if it was not.
    var callerCancellation: CallerCancellation? { self.state.withLock { $0.callerCancellation } }

    /// The calling task was cancelled: records whether its deadline had passed then. The moment
    /// of the cancellation decides, not the moment the operation ends: an operation may throw
    /// long after its caller was cancelled, past a deadline whose timer has not fired yet.
    func callerCancelled(pastDeadline: Bool) {
        self.state.withLock { state in
            if state.callerCancellation == nil {
                state.callerCancellation = pastDeadline ? .atOrAfterDeadline : .beforeDeadline
            }
        }
    }

    /// Runs `operation` in the calling (child) task, cancellable by the timer meanwhile.
    func run<Value>(_ operation: () async throws -> Value) async throws -> Value {
        withUnsafeCurrentTask { task in
            let child = task.map(ChildTask.init)
            self.state.withLock { state in
                state.child = child
                if state.ending != .running { child?.task.cancel() }  // the timer came first
            }
        }
        defer {
            self.state.withLock { state in
                state.child = nil
                state.left = true
            }
        }
        return try await operation()
    }

    /// The timer's end: cancels the operation if it still runs.
    private func end(_ ending: Ending) {
        self.state.withLock { state in
            guard !state.left, state.ending == .running else { return }
            state.ending = ending
            state.child?.task.cancel()
        }
    }

    /// What the deadline timer's callback holds: expires the watch when it runs, and ends it
    /// as unrun when released before running (the service ended the timer).
    final class Alarm: Sendable {
        private let watch: WheelDeadlineWatch
        /// Set by the timer's thread, read by whichever thread releases the alarm (the seam).
        private let rang = SeamAtomic<Bool>(false)

        init(_ watch: WheelDeadlineWatch) {
            self.watch = watch
        }

        func ring() {
            self.rang.store(true, ordering: .relaxed)
            self.watch.end(.expired)
        }

        deinit {
            // Released after the operation left (its timer cancelled), this changes nothing.
            if !self.rang.load(ordering: .relaxed) { self.watch.end(.timerEndedUnrun) }
        }
    }
}
