import SerialCore

/// Collects the values that callbacks deliver on other threads, and lets a test wait for them
/// with a timeout that fails with a message instead of hanging.
///
/// Give `record(_:)` to the code under test as its callback; then wait, from the test, for the
/// values to arrive. A wait returns every value recorded so far, in arrival order, or throws a
/// ``RecorderTimeout`` whose description names the recorder, what was awaited, where, and what
/// did arrive — so a lost callback fails the test with a readable message, and CI never hangs.
///
/// ```swift
/// let fired = CallbackRecorder<String>("delayed work")
/// let queue = SerialQueue(label: "work")
/// queue.asyncAfter(delay: .milliseconds(20)) { fired.record("first") }
/// queue.asyncAfter(delay: .milliseconds(40)) { fired.record("second") }
/// let values = try fired.wait(forCount: 2, timeout: .seconds(10))   // on the test's thread
/// #expect(values == ["first", "second"])
/// ```
///
/// **Threads.** `record(_:)` may be called from any thread, any number of times. The blocking
/// waits sleep on a condition variable (monotonic clock); from `async` code, the `async`
/// overloads suspend instead of blocking a cooperative thread.
///
/// For code on virtual time, prefer `VirtualScheduler`: there nothing happens on another thread
/// and nothing needs waiting for.
public final class CallbackRecorder<Value: Sendable>: Sendable {
    private struct Waiter {
        let isSatisfied: @Sendable ([Value]) -> Bool
        let continuation: CheckedContinuation<[Value]?, Never>
    }

    private struct State {
        var values: [Value] = []
        var waiters: [Int: Waiter] = [:]
        var cancelledWaiters: Set<Int> = []
        var nextWaiter = 0
    }

    /// Names this recorder in timeout messages.
    public let label: String

    private let state = ConditionLock(State())

    /// Creates an empty recorder; `label` names it in timeout messages.
    public init(_ label: String = "CallbackRecorder") {
        self.label = label
    }

    /// Appends `value`, waking every wait it satisfies. Safe from any thread.
    public func record(_ value: Value) {
        let ready = self.state.withLockThenBroadcast { state -> [(CheckedContinuation<[Value]?, Never>, [Value])] in
            state.values.append(value)
            let satisfied = state.waiters.filter { $0.value.isSatisfied(state.values) }
            for id in satisfied.keys { state.waiters[id] = nil }
            return satisfied.values.map { ($0.continuation, state.values) }
        }
        for (continuation, values) in ready { continuation.resume(returning: values) }
    }

    /// Every value recorded so far, in arrival order.
    public var values: [Value] { self.state.withLock { $0.values } }

    /// How many values have been recorded.
    public var count: Int { self.state.withLock { $0.values.count } }

    // MARK: Blocking waits

    /// Blocks until at least `count` values have arrived, then returns all of them.
    ///
    /// - Throws: ``RecorderTimeout`` when `timeout` passes first; its description says how many
    ///   arrived and where the wait was made.
    @discardableResult
    public func wait(
        forCount count: Int, timeout: Duration = .seconds(10), fileID: String = #fileID, line: Int = #line
    ) throws(RecorderTimeout) -> [Value] {
        try self.wait(until: "\(count) value\(count == 1 ? "" : "s")", timeout: timeout, fileID: fileID, line: line) {
            $0.count >= count
        }
    }

    /// Blocks until `isSatisfied` holds for the values recorded so far (checked at once and
    /// after every `record`), then returns them. `description` says what is awaited, for the
    /// timeout message.
    ///
    /// - Throws: ``RecorderTimeout`` when `timeout` passes first.
    @discardableResult
    public func wait(
        until description: String, timeout: Duration = .seconds(10), fileID: String = #fileID, line: Int = #line,
        _ isSatisfied: ([Value]) -> Bool
    ) throws(RecorderTimeout) -> [Value] {
        let deadline = MonotonicInstant.now() + timeout
        if let values = self.state.wait(until: deadline, for: { isSatisfied($0.values) ? $0.values : nil }) {
            return values
        }
        throw self.timedOut(awaiting: description, timeout: timeout, fileID: fileID, line: line)
    }

    // MARK: Async waits

    /// Suspends until at least `count` values have arrived, then returns all of them; does not
    /// block a cooperative thread.
    ///
    /// - Throws: ``RecorderTimeout`` when `timeout` passes first; `CancellationError` when the
    ///   waiting task is cancelled.
    @discardableResult
    public func wait(
        forCount count: Int, timeout: Duration = .seconds(10), fileID: String = #fileID, line: Int = #line
    ) async throws -> [Value] {
        try await self.wait(
            until: "\(count) value\(count == 1 ? "" : "s")", timeout: timeout, fileID: fileID, line: line
        ) { $0.count >= count }
    }

    /// Suspends until `isSatisfied` holds for the values recorded so far, then returns them.
    ///
    /// - Throws: ``RecorderTimeout`` when `timeout` passes first; `CancellationError` when the
    ///   waiting task is cancelled.
    @discardableResult
    public func wait(
        until description: String, timeout: Duration = .seconds(10), fileID: String = #fileID, line: Int = #line,
        _ isSatisfied: @escaping @Sendable ([Value]) -> Bool
    ) async throws -> [Value] {
        let arrived = await withTaskGroup(of: [Value]?.self) { group in
            group.addTask { await self.arrival(where: isSatisfied) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let arrived { return arrived }
        try Task.checkCancellation()
        // The timer won, but the last value may have arrived in the same instant.
        let values = self.values
        if isSatisfied(values) { return values }
        throw self.timedOut(awaiting: description, timeout: timeout, fileID: fileID, line: line)
    }

    /// The values once `isSatisfied` holds, or `nil` when the waiting task is cancelled.
    private func arrival(where isSatisfied: @escaping @Sendable ([Value]) -> Bool) async -> [Value]? {
        let id = self.state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Value]?, Never>) in
                let now: [Value]?? = self.state.withLock { state in
                    if state.cancelledWaiters.remove(id) != nil { return .some(nil) }
                    if isSatisfied(state.values) { return .some(state.values) }
                    state.waiters[id] = Waiter(isSatisfied: isSatisfied, continuation: continuation)
                    return .none
                }
                if let answer = now { continuation.resume(returning: answer) }
            }
        } onCancel: {
            RuntimeCallback.run {  // under the runtime's lock: see RuntimeCallback
                let waiter = self.state.withLock { state -> Waiter? in
                    if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                    // Not registered yet: leave a note so registration gives up at once.
                    state.cancelledWaiters.insert(id)
                    return nil
                }
                waiter?.continuation.resume(returning: nil)
            }
        }
    }

    private func timedOut(awaiting description: String, timeout: Duration, fileID: String, line: Int)
        -> RecorderTimeout
    {
        let values = self.values
        let shown = values.suffix(10).map { String(describing: $0) }.joined(separator: ", ")
        let more = values.count > 10 ? "…, " : ""
        return RecorderTimeout(
            description: """
                CallbackRecorder "\(self.label)": waited \(timeout) at \(fileID):\(line) for \(description); \
                \(values.count) arrived: [\(more)\(shown)]. A callback was lost, or came later than the timeout.
                """)
    }
}

extension CallbackRecorder where Value == Void {
    /// Records one call: for callbacks that carry nothing, counted with `wait(forCount:)`.
    public func record() {
        self.record(())
    }
}
