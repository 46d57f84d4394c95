/// How a `Poller` asks for the job's state: one request per attempt, in one of two forms,
/// `.completion { attempt, reply in … }` or `.async { … }` (see `Poller` for an example).
///
/// A value rather than a trailing closure, so that one `Poller` initializer takes both forms.
public struct PollQuery<Value: Sendable>: Sendable {
    /// The way a completion-form query hands back its result: call it once, from any thread.
    /// Later calls, and calls for abandoned attempts, are ignored.
    public typealias Reply = @Sendable (Result<Value, any Error>) -> Void

    enum Form: Sendable {
        case completion(@Sendable (_ attempt: PollAttempt, _ reply: @escaping Reply) -> Void)
        case async(@Sendable () async throws -> Value)
    }

    let form: Form

    /// A query in completion form: `start` is invoked on the poller's scheduler to start the
    /// request for `attempt`, and calls `reply` once with its result, from any thread.
    ///
    /// `start` should return quickly: it runs on the scheduler, between other work.
    public static func completion(
        _ start: @escaping @Sendable (_ attempt: PollAttempt, _ reply: @escaping Reply) -> Void
    ) -> PollQuery {
        PollQuery(form: .completion(start))
    }

    /// A query in async form, run in a new task per attempt. The task is cancelled when the
    /// attempt is abandoned (attempt timeout, deadline, cancel), and whatever it returns then
    /// is ignored; a thrown error counts as a failed attempt.
    public static func async(_ query: @escaping @Sendable () async throws -> Value) -> PollQuery {
        PollQuery(form: .async(query))
    }
}
