/// The async face of a countdown: `for await tick in manager.countdown(from: .seconds(10)) { }`.
extension CountdownManager {
    /// Starts a countdown of `duration` whose ticks arrive as an async sequence.
    ///
    /// ```swift
    /// for await tick in countdowns.countdown(from: .seconds(5)) {
    ///     print("\(tick.remaining) left")        // last element: remaining zero, end == .finished
    /// }
    /// ```
    ///
    /// The countdown is keyed by its sequence, not by a receiver: it shares the manager's ticker
    /// and first-tick policy, but never replaces nor is replaced by a `register` countdown. It
    /// runs while the sequence or its iterator exists:
    /// - the sequence finishes after its final element, whose `end` says why: `.finished`,
    ///   `.cancelled` when `cancelAll()` ends it, or `.shutDown` when the queue stops for good
    ///   (started after that, the sequence holds that one element only);
    /// - cancelling the iterating task cancels the countdown at once (the ticker stops if it was
    ///   the last one);
    /// - once neither the sequence nor an iterator exists (the loop was left, or the sequence
    ///   never iterated), the countdown ends at the next tick, as a released receiver's does.
    ///
    /// A slow consumer sees the newest tick only (older ones are dropped); the final element is
    /// never dropped. Iterate a sequence once.
    ///
    /// - Complexity: O(1) to start; one handler call per tick, like `register`.
    public func countdown(from duration: Duration) -> CountdownSequence {
        let token = CountdownSequence.Token()
        let (stream, continuation) = AsyncStream.makeStream(
            of: CountdownTick.self, bufferingPolicy: .bufferingNewest(1))
        let registration = Registration(
            handler: { _, tick, _ in
                continuation.yield(tick)
                if tick.isFinal { continuation.finish() }
            },
            abandoned: { continuation.finish() })
        let key = ObjectIdentifier(token)
        // Weak: the registration owns the continuation, which owns this closure.
        continuation.onTermination = { [weak self, weak registration] termination in
            guard case .cancelled = termination, let self, let registration else { return }
            self.remove(registration, key: key, as: .cancelled)
        }
        _ = self.insert(token, duration: duration, registration: registration)
        return CountdownSequence(base: stream, token: token)
    }
}

/// The ticks of one countdown started by `CountdownManager.countdown(from:)`.
///
/// The countdown is held weakly by its manager and strongly by this sequence and its iterator:
/// dropping both ends it.
public struct CountdownSequence: AsyncSequence, Sendable {
    /// One tick of the countdown; the last one has `end` set.
    public typealias Element = CountdownTick
    /// The sequence never throws: it ends by finishing.
    public typealias Failure = Never

    /// The countdown's key: an object only this sequence and its iterator keep alive.
    final class Token: Sendable {}

    let base: AsyncStream<CountdownTick>
    let token: Token

    /// Creates the iterator. Iterate a sequence once.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.base.makeAsyncIterator(), token: self.token)
    }

    /// Produces the countdown's ticks; `nil` once it ended or the iterating task was cancelled.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<CountdownTick>.Iterator
        let token: Token

        /// The next tick, or `nil` after the last one or on task cancellation.
        public mutating func next() async -> CountdownTick? {
            await self.base.next()
        }

        /// The next tick, awaited in `actor`'s isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> CountdownTick? {
            await self.base.next(isolation: actor)
        }
    }
}

// An iterator belongs to one consuming task.
@available(*, unavailable)
extension CountdownSequence.AsyncIterator: Sendable {}
