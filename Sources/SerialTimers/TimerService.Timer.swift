import SerialCore

extension TimerService {
    /// One timer: the record the wheel keeps while it waits and the object a `TimerHandle`
    /// points at, so a timer costs one allocation. It holds the core, never the service, so a
    /// pending timer does not keep a released service alive.
    final class Timer: @unchecked Sendable {  // every `var`: under the core's lock
        let core: Core
        /// The deadline that was asked for.
        var deadline: MonotonicInstant
        /// Where the timer sits in the wheel while `status` is `.pending`.
        var slot = TimingWheel<Timer>.Handle(index: -1, generation: 0)
        /// Taken (set to `nil`) by whoever moves the timer out of `.pending`.
        var callback: (@Sendable () -> Void)?
        var status = TimerStatus.pending

        init(core: Core, deadline: MonotonicInstant, callback: @escaping @Sendable () -> Void) {
            self.core = core
            self.deadline = deadline
            self.callback = callback
        }
    }
}
