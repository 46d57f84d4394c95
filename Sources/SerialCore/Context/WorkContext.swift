import Synchronization

/// Carries a context (a trace, a request id, a tenant) from the code that submits work to the
/// work itself, across every hop this library makes: `async` and `asyncAfter` work, `run` bodies,
/// timer callbacks, countdown handlers, poll queries and request attempts run with the context their
/// submitter had. The core knows nothing of what a context is: an integration installs how to
/// capture the current one and how to restore it (the integrations package does this for
/// swift-distributed-tracing's `ServiceContext`). Executor jobs need nothing: a task carries its
/// own task-locals.
///
/// ```swift
/// WorkContext.install(WorkContext.Propagator(
///     capture: { RequestID.current },                                          // where work is submitted
///     restore: { id, work in RequestID.$current.withValue(id as? String) { work() } }   // where it runs
/// ))
/// ```
///
/// **Cost.** With nothing installed, a submission pays one relaxed atomic load and nothing else.
/// Installed, it pays a capture and one closure allocation per submission that has a context
/// (`capture` returning `nil` means "nothing to carry": no allocation).
public enum WorkContext {
    /// How to capture the current context and restore it around work.
    public struct Propagator: Sendable {
        let capture: @Sendable () -> (any Sendable)?
        let restore: @Sendable (any Sendable, () -> Void) -> Void

        /// - Parameters:
        ///   - capture: called on the submitting thread, at submission; returns the context to
        ///     carry, or `nil` when there is none.
        ///   - restore: called on the thread that runs the work, with the captured context;
        ///     must call `work` exactly once, with the context in place.
        public init(
            capture: @escaping @Sendable () -> (any Sendable)?,
            restore: @escaping @Sendable (_ context: any Sendable, _ work: () -> Void) -> Void
        ) {
            self.capture = capture
            self.restore = restore
        }
    }

    /// A context captured at submission, to restore around the work later.
    public struct Captured: Sendable {
        let value: any Sendable
        let propagator: Propagator

        /// Runs `work` with this context in place.
        public func run(_ work: () -> Void) {
            self.propagator.restore(self.value, work)
        }
    }

    /// Whether a propagator is installed: the one load on the hot path. A plain `Atomic`, not a
    /// `SeamAtomic`: the process's configuration, set by `install`, not a hand-off between the
    /// runtime's threads (and a scheduling point here would add one to every submission).
    private static let isInstalled = Atomic<Bool>(false)
    private static let installed = LockedValue<Propagator?>(nil)

    /// Installs `propagator` for the whole process, replacing any installed before. Work
    /// submitted before keeps what it captured.
    public static func install(_ propagator: Propagator) {
        self.installed.withLock { $0 = propagator }
        self.isInstalled.store(true, ordering: .releasing)
    }

    /// Removes the installed propagator: from now on nothing is captured.
    public static func uninstall() {
        self.isInstalled.store(false, ordering: .releasing)
        self.installed.withLock { $0 = nil }
    }

    /// The submitting code's context, or `nil` when nothing is installed or there is none.
    ///
    /// - Complexity: One relaxed load when nothing is installed.
    @inline(__always)
    public static func capture() -> Captured? {
        guard _slowPath(self.isInstalled.load(ordering: .relaxed)) else { return nil }
        return self.captureInstalled()
    }

    @inline(never)
    private static func captureInstalled() -> Captured? {
        guard let propagator = self.installed.withLock({ $0 }), let value = propagator.capture() else { return nil }
        return Captured(value: value, propagator: propagator)
    }

    /// `work`, bound to the submitting code's context: it runs with that context in place.
    /// Returns `work` itself when there is nothing to carry.
    ///
    /// - Complexity: One relaxed load when nothing is installed; otherwise a capture and one allocation.
    @inline(__always)
    public static func bind(_ work: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        guard _slowPath(self.isInstalled.load(ordering: .relaxed)) else { return work }
        return self.bindInstalled(work)
    }

    /// Runs `work` with `captured` in place, or as it is when `captured` is `nil`.
    @inline(__always)
    public static func run(_ captured: Captured?, _ work: () -> Void) {
        if let captured { captured.run(work) } else { work() }
    }

    @inline(never)
    private static func bindInstalled(_ work: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        guard let captured = self.captureInstalled() else { return work }
        return { captured.run(work) }
    }
}
