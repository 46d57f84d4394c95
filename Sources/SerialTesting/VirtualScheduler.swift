import SerialCore
import SerialTimers

/// A scheduler whose clock moves only when a test moves it: the virtual-time twin of a
/// `SerialQueue`, for testing time-based code without sleeping.
///
/// Work never runs by itself. `advance(by:)` and `advance(to:)` move the clock and run, on the
/// calling thread, every work that falls due, in deadline order (ties in submission order),
/// with `now` set to each work's deadline while it runs; work submitted meanwhile runs too if
/// it falls due within the advance. `runUntilIdle()` runs what is due without moving time.
///
/// ```swift
/// let scheduler = VirtualScheduler()
/// let fired = CallbackRecorder<Void>("fired")
/// try scheduler.schedule(after: .seconds(5)) { fired.record() }
/// scheduler.advance(by: .seconds(4))   // nothing: fired.count == 0
/// scheduler.advance(by: .seconds(1))   // fires, with scheduler.now == start + 5 s
/// ```
///
/// Time starts at 1,000 s (not 0) so code that subtracts durations from `now` stays positive.
/// It is safe to submit from any thread; advancing from two threads at once, or from inside
/// its own work, traps.
public final class VirtualScheduler: Scheduling {
    private struct State {
        var now: MonotonicInstant
        var heap = DelayedHeap()
        var runningThread: UInt? = nil
        var ranCount = 0
        var isShutDown = false
        var shutdownHandlers = ShutdownHandlers()
    }

    private let state: LockedValue<State>
    /// The `clock`, made on first use (see `VirtualScheduler+Clock.swift`); dropped at shutdown,
    /// which breaks the cycle between this scheduler and the clock's timer service.
    let clockParts = LockedValue<VirtualClockParts?>(nil)
    /// The name `SchedulingError.shutDown` carries once this scheduler is shut down.
    public let label: String

    /// Creates a scheduler whose clock reads `start`.
    public init(
        label: String = "VirtualScheduler",
        startingAt start: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    ) {
        self.label = label
        self.state = LockedValue(State(now: start))
    }

    /// The virtual time. While a work runs, its deadline (or the time it was submitted at).
    public var now: MonotonicInstant { self.state.withLock { $0.now } }

    /// Whether the caller is inside work this scheduler is running.
    public var isCurrent: Bool { self.state.withLock { $0.runningThread == CurrentThread.id } }

    /// How many works wait (cancelled ones excluded).
    public var pendingCount: Int {
        self.state.withLock { state in state.heap.pendingCount }
    }

    /// The deadline of the earliest pending work, or `nil` when none waits.
    public var nextDeadline: MonotonicInstant? {
        self.state.withLock { state in state.heap.earliestPendingDeadline }
    }

    /// How many works have run so far.
    public var ranCount: Int { self.state.withLock { $0.ranCount } }

    /// Queues `work` to run at the current virtual time, after what is already due.
    ///
    /// - Throws: `SchedulingError.shutDown` after `shutdown(_:)`; `work` is released unrun.
    public func execute(_ work: @escaping @Sendable () -> Void) throws(SchedulingError) {
        let accepted = self.state.withLock { state in
            guard !state.isShutDown else { return false }
            state.heap.insert(DelayedWork(deadline: state.now, work: work))
            return true
        }
        if !accepted { throw SchedulingError.shutDown(scheduler: self.label) }
    }

    /// Queues `work` for `deadline` (a past deadline means "as soon as the scheduler runs").
    ///
    /// - Throws: `SchedulingError.shutDown` after `shutdown(_:)`; `work` is released unrun.
    @discardableResult
    public func schedule(
        at deadline: MonotonicInstant, _ work: @escaping @Sendable () -> Void
    ) throws(SchedulingError) -> DelayedWork {
        let handle = DelayedWork(deadline: deadline, work: work)
        let accepted = self.state.withLock { state in
            guard !state.isShutDown else { return false }
            state.heap.insert(handle)
            return true
        }
        if !accepted {
            handle.cancel()
            throw SchedulingError.shutDown(scheduler: self.label)
        }
        return handle
    }

    /// Keeps `handler` for `shutdown(_:)`, which calls it on the test's thread; after the
    /// shutdown, calls it at once.
    public func whenShutDown(_ handler: @escaping @Sendable (SchedulingError) -> Void) -> ShutdownSubscription {
        guard let id = self.state.withLock({ $0.shutdownHandlers.add(handler) }) else {
            handler(.shutDown(scheduler: self.label))
            return ShutdownSubscription {}
        }
        return ShutdownSubscription { [weak self] in
            let removed = self?.state.withLock { $0.shutdownHandlers.remove(id) }
            _ = removed  // released here, outside the lock
        }
    }

    /// Stops the scheduler for good, as a `SerialQueue`'s `shutdown` does: from now on
    /// `execute` and `schedule` throw. With `.drain`, work due at the current time runs first
    /// (including what it submits before the scheduler stops); then every pending work is
    /// cancelled, and the `whenShutDown` handlers run, on the calling thread, in registration
    /// order. Calling it again does nothing.
    ///
    /// - Returns: How many pending works were cancelled.
    @discardableResult
    public func shutdown(_ mode: ShutdownMode = .drain) -> Int {
        if mode == .drain { self.runUntilIdle() }
        let (cancelled, handlers) = self.state.withLock { state -> ([DelayedHeap.Entry], [ShutdownHandlers.Handler]) in
            guard !state.isShutDown else { return ([], []) }
            state.isShutDown = true
            return (state.heap.removeAll(), state.shutdownHandlers.takeAll())
        }
        var prevented = 0
        for entry in cancelled where entry.handle.cancel() { prevented += 1 }
        let reason = SchedulingError.shutDown(scheduler: self.label)
        for handler in handlers { handler(reason) }
        let clock = self.clockParts.withLock { parts in
            defer { parts = nil }
            return parts
        }
        _ = clock  // released outside the lock
        return prevented
    }

    /// Whether `shutdown(_:)` was called.
    public var isShutDown: Bool { self.state.withLock { $0.isShutDown } }

    /// Moves the clock forward by `duration`, running everything that falls due on the way.
    ///
    /// - Returns: How many works ran.
    @discardableResult
    public func advance(by duration: Duration) -> Int {
        if duration < .zero { fatalError("VirtualScheduler.advance(by: \(duration)): time cannot go back; pass zero or more") }
        return self.advance(to: self.now.advanced(by: duration))
    }

    /// Moves the clock to `target` (no-op for the past), running everything due up to it.
    ///
    /// - Returns: How many works ran.
    @discardableResult
    public func advance(to target: MonotonicInstant) -> Int {
        self.runDue(upTo: target, limit: .max)
    }

    /// Runs every work due at the current time, including work they submit, without moving time.
    ///
    /// - Parameter limit: a bound on how many works may run; exceeding it traps, since it
    ///   means work keeps re-submitting itself and the scheduler would never go idle.
    /// - Returns: How many works ran.
    @discardableResult
    public func runUntilIdle(limit: Int = 100_000) -> Int {
        self.runDue(upTo: self.now, limit: limit)
    }

    private func runDue(upTo target: MonotonicInstant, limit: Int) -> Int {
        let thread = CurrentThread.id
        self.state.withLock { state in
            if state.runningThread != nil {
                fatalError(
                    "VirtualScheduler: advanced while it is already running work (from its own work or from two "
                        + "threads); advance it from the test only")
            }
            state.runningThread = thread
        }
        defer { self.state.withLock { $0.runningThread = nil } }
        var ran = 0
        while let entry = self.popDue(upTo: target) {
            guard let work = entry.handle.claimRun() else { continue }
            ran += 1
            if ran > limit {
                fatalError(
                    "VirtualScheduler.runUntilIdle: more than \(limit) works ran without going idle; some work "
                        + "probably re-submits itself at the current time. Advance time instead, or raise the limit.")
            }
            work()
            self.state.withLock { $0.ranCount += 1 }
        }
        self.state.withLock { state in
            if state.now < target { state.now = target }
        }
        return ran
    }

    private func popDue(upTo target: MonotonicInstant) -> DelayedHeap.Entry? {
        self.state.withLock { state in
            guard let first = state.heap.first, first.deadline <= target else { return nil }
            if state.now < first.deadline { state.now = first.deadline }
            return state.heap.popFirst()
        }
    }
}
