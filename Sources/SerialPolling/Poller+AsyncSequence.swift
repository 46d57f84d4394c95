import SerialCore

extension Poller {
    /// The poll as an async sequence of updates: iterating starts a session.
    ///
    /// ```swift
    /// for try await status in poller.updates { render(status) }   // ends when done
    /// ```
    ///
    /// See `PollUpdates` for how it ends, throws and cancels.
    public var updates: PollUpdates<Value> { PollUpdates(poller: self) }
}

/// A poll session seen as an async sequence of its updates.
///
/// **Starting.** Each `makeAsyncIterator()` (each `for try await` loop) starts a new session
/// of the poller; like `start`, it traps if a session is already running.
///
/// **Ending.** The sequence yields every update in order, then:
/// - `completed`: ends normally (`nil`) — the done value was the last element if it changed;
/// - `failed(error)`: throws `error`, the last query error (or `PollError.attemptTimedOut`);
/// - `timedOut`: throws `PollError.timedOut`;
/// - `cancelled` (by `Poller.cancel()`): throws `CancellationError`;
/// - `schedulerShutDown(reason)`: throws `PollError.schedulerShutDown(reason)`.
/// Updates decided before a failure, timeout or shutdown are yielded before it is thrown.
///
/// **Cancellation.** Cancelling the iterating task cancels the session at once and the
/// pending `next()` throws `CancellationError` (buffered updates are discarded). Leaving the
/// loop early (`break`, `return`, a throw from the body) releases the iterator, which cancels
/// the session too: a poll never outlives the loop that drives it.
///
/// **Buffering.** Updates the consumer has not taken yet are kept, in order; a poller
/// produces at most one update per attempt, so the buffer grows no faster than the cadence.
public struct PollUpdates<Value: Sendable>: AsyncSequence, Sendable {
    /// Each element is one reported value of the job.
    public typealias Element = Value

    let poller: Poller<Value>

    /// Starts a session of the poller and returns the iterator over its updates.
    ///
    /// - Precondition: No session of the poller is running.
    public func makeAsyncIterator() -> Iterator {
        let channel = UpdateChannel<Value>()
        let session = self.poller.start(
            onUpdate: { value in channel.push(value) },
            onOutcome: { outcome in
                switch outcome {
                case .completed: channel.finish(nil)
                case .failed(let error): channel.finish(error)
                case .timedOut: channel.finish(PollError.timedOut)
                case .cancelled: channel.finish(CancellationError())
                case .schedulerShutDown(let reason): channel.finish(PollError.schedulerShutDown(reason))
                }
            })
        return Iterator(channel: channel, guardian: SessionGuardian(poller: self.poller, session: session))
    }

    /// Iterates one session's updates. Not meant to be shared between tasks.
    public struct Iterator: AsyncIteratorProtocol {
        let channel: UpdateChannel<Value>
        let guardian: SessionGuardian<Value>

        /// The next update, or `nil` when the job is done; throws on failure, timeout or cancel.
        public mutating func next() async throws -> Value? {
            let guardian = self.guardian
            let channel = self.channel
            return try await withTaskCancellationHandler {
                try await channel.next()
            } onCancel: {
                RuntimeCallback.run {  // under the runtime's lock: see RuntimeCallback
                    channel.finish(CancellationError(), discardingBuffer: true)
                    guardian.cancelSession()
                }
            }
        }
    }
}

/// Cancels its session when the last iterator copy is released (an early exit from the loop).
final class SessionGuardian<Value: Sendable>: Sendable {
    let poller: Poller<Value>
    let session: UInt64

    init(poller: Poller<Value>, session: UInt64) {
        self.poller = poller
        self.session = session
    }

    func cancelSession() {
        self.poller.cancel(session: self.session)
    }

    deinit {
        // A finished session ignores this; a newer session is protected by the epoch.
        self.poller.cancel(session: self.session)
    }
}

/// A single-consumer buffer between the poller's callbacks and `next()`.
final class UpdateChannel<Value: Sendable>: Sendable {
    private struct State {
        var buffer: [Value] = []
        var head = 0
        /// `.some(nil)`: ended normally; `.some(error)`: ends by throwing it.
        var end: (any Error)?? = nil
        var endTaken = false
        var waiter: CheckedContinuation<Value?, any Error>? = nil
    }

    private let state = LockedValue(State())

    private enum NextAction {
        case value(Value)
        case end((any Error)?)
        case wait
    }

    func push(_ value: Value) {
        let waiter: CheckedContinuation<Value?, any Error>? = self.state.withLock { state in
            guard state.end == nil else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffer.append(value)
            return nil
        }
        waiter?.resume(returning: value)
    }

    /// Ends the channel once: `error == nil` ends normally. Later calls change nothing.
    func finish(_ error: (any Error)?, discardingBuffer: Bool = false) {
        let resume: (CheckedContinuation<Value?, any Error>, (any Error)?)? = self.state.withLock { state in
            if state.end == nil { state.end = .some(error) }
            if discardingBuffer {
                state.buffer.removeAll()
                state.head = 0
            }
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            state.endTaken = true
            return (waiter, state.end!)
        }
        if let (waiter, end) = resume {
            if let end { waiter.resume(throwing: end) } else { waiter.resume(returning: nil) }
        }
    }

    func next() async throws -> Value? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value?, any Error>) in
            let action: NextAction = self.state.withLock { state in
                if state.head < state.buffer.count {
                    let value = state.buffer[state.head]
                    state.head += 1
                    if state.head == state.buffer.count {
                        state.buffer.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    return .value(value)
                }
                if let end = state.end {
                    // The end is reported once; afterwards the sequence just returns nil.
                    let first = !state.endTaken
                    state.endTaken = true
                    return .end(first ? end : nil)
                }
                if state.waiter != nil {
                    PollingMisuse.internalInconsistency("PollUpdates.next() entered twice at once (iterator shared by two tasks?)")
                }
                state.waiter = continuation
                return .wait
            }
            switch action {
            case .value(let value): continuation.resume(returning: value)
            case .end(let error?): continuation.resume(throwing: error)
            case .end(nil): continuation.resume(returning: nil)
            case .wait: break
            }
        }
    }
}
