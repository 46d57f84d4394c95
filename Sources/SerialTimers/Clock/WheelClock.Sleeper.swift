import SerialCore
import Synchronization

extension WheelClock {
    /// One sleeping task: its continuation and its timer, and which of the timer firing, a
    /// cancellation, or the timer's end without firing (its service stopped, its scheduler
    /// shut down, or the timer refused) resumes it. Exactly one does: the first to take the state.
    ///
    /// The timer's callback holds an `Alarm`, not the sleeper: the alarm's release tells the
    /// sleeper that the callback will never run (a stopped service releases callbacks unrun),
    /// so a sleep never outlives its timer.
    ///
    /// The observer (a test clock's count of sleepers) hears +1 only once the timer is armed,
    /// under the lock as the state becomes `sleeping`, and -1 only when a `sleeping` state ends:
    /// a test that waits for a sleeper and then advances time cannot slip in before the timer
    /// exists (the advance would find nothing due, and the timer, armed after it, would wait for
    /// a later one). A sleep that ends while arming is never counted.
    final class Sleeper: Sendable {
        private typealias Continuation = UnsafeContinuation<Void, any Error>

        private enum State {
            /// `start` has not run.
            case starting
            /// Cancelled before `start`: `start` resumes at once and arms nothing.
            case cancelledBeforeStart
            /// `start` is arming the timer (not under this lock: the service may release the
            /// callback, and so take this lock, inside `schedule`).
            case arming(Continuation)
            /// Cancelled while arming: `start` cancels the timer it gets.
            case cancelledWhileArming
            /// The callback was released unrun while arming: `start` says why.
            case releasedWhileArming(Continuation)
            /// Armed (and counted): the timer, a cancellation or the callback's release ends it.
            case sleeping(Continuation, TimerHandle)
            /// Resumed.
            case ended
        }

        private let state = LockedValue<State>(.starting)
        private let observer: (@Sendable (Int) -> Void)?

        init(observer: (@Sendable (Int) -> Void)?) {
            self.observer = observer
        }

        /// Arms the timer, or resumes at once when cancelled already or refused.
        func start(
            _ continuation: UnsafeContinuation<Void, any Error>, timers: TimerService, deadline: MonotonicInstant,
            tolerance: Duration?
        ) {
            let mayArm = self.state.withLock { state in
                guard case .starting = state else { return false }
                state = .arming(continuation)
                return true
            }
            guard mayArm else {
                continuation.resume(throwing: CancellationError())
                return
            }
            let handle: TimerHandle
            do {
                // The alarm belongs to the callback alone: its release tells whether the timer ran.
                handle = try timers.schedule(at: deadline, tolerance: tolerance) { [alarm = Alarm(self)] in alarm.ring() }
            } catch {
                self.armingFailed(error)
                return
            }
            self.armed(handle)
        }

        private func armed(_ handle: TimerHandle) {
            enum Next {
                case none, cancelTimer, resumeUnrun(Continuation)
            }
            let next: Next = self.state.withLock { state in
                switch state {
                case .arming(let continuation):
                    state = .sleeping(continuation, handle)
                    // Under the lock, so this +1 comes before the -1 of whatever ends the sleep.
                    self.observer?(1)
                    return .none
                case .cancelledWhileArming:
                    state = .ended
                    return .cancelTimer
                case .releasedWhileArming(let continuation):
                    state = .ended
                    return .resumeUnrun(continuation)
                case .ended:
                    return .none  // it fired already
                case .starting, .cancelledBeforeStart, .sleeping:
                    fatalError("WheelClock: internal inconsistency: a sleeper was armed in state \(state)")
                }
            }
            switch next {
            case .none: break
            case .cancelTimer: handle.cancel()
            case .resumeUnrun(let continuation):
                continuation.resume(throwing: handle.status.whyEndedUnrun)
            }
        }

        private func armingFailed(_ error: any Error) {
            let continuation: Continuation? = self.state.withLock { state in
                switch state {
                case .arming(let continuation), .releasedWhileArming(let continuation):
                    state = .ended
                    return continuation
                default:
                    state = .ended
                    return nil  // cancelled meanwhile: resumed by `cancel`
                }
            }
            guard let continuation else { return }
            continuation.resume(throwing: error)
        }

        /// The timer fired: the sleep is over.
        fileprivate func ring() {
            let ended: (Continuation, counted: Bool)? = self.state.withLock { state in
                switch state {
                case .arming(let continuation):
                    state = .ended
                    return (continuation, false)
                case .sleeping(let continuation, _):
                    state = .ended
                    return (continuation, true)
                default:
                    return nil
                }
            }
            guard let (continuation, counted) = ended else { return }
            if counted { self.observer?(-1) }
            continuation.resume()
        }

        /// The timer's callback was released: if it never ran, the service ended the timer
        /// (stopped, or its scheduler shut down) and the sleep throws why.
        fileprivate func alarmReleased() {
            let ended: (Continuation, TimerHandle)? = self.state.withLock { state in
                switch state {
                case .arming(let continuation):
                    state = .releasedWhileArming(continuation)
                    return nil
                case .sleeping(let continuation, let handle):
                    state = .ended
                    return (continuation, handle)
                default:
                    return nil
                }
            }
            guard let (continuation, handle) = ended else { return }
            self.observer?(-1)
            continuation.resume(throwing: handle.status.whyEndedUnrun)
        }

        /// The task was cancelled: cancels the timer (unlinking and freeing it now) and resumes
        /// with `CancellationError`, unless the sleep ended first.
        func cancel() {
            enum Taken {
                case nothing, continuation(Continuation), both(Continuation, TimerHandle)
            }
            let taken: Taken = self.state.withLock { state in
                switch state {
                case .starting:
                    state = .cancelledBeforeStart
                    return .nothing
                case .arming(let continuation):
                    state = .cancelledWhileArming
                    return .continuation(continuation)
                case .sleeping(let continuation, let handle):
                    state = .ended
                    return .both(continuation, handle)
                case .cancelledBeforeStart, .cancelledWhileArming, .releasedWhileArming, .ended:
                    return .nothing
                }
            }
            switch taken {
            case .nothing:
                return
            case .continuation(let continuation):
                continuation.resume(throwing: CancellationError())  // while arming: never counted
            case .both(let continuation, let handle):
                handle.cancel()
                self.observer?(-1)
                continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// What a sleep's timer callback holds: rings the sleeper when it runs, and tells it when
    /// released (after running, or unrun when the service ended the timer).
    private final class Alarm: Sendable {
        let sleeper: Sleeper

        init(_ sleeper: Sleeper) {
            self.sleeper = sleeper
        }

        func ring() {
            self.sleeper.ring()
        }

        deinit {
            self.sleeper.alarmReleased()
        }
    }
}
