/// Every programmer-error trap of this library, with the words crash tests match.
///
/// A message names the object, the rule that was broken, and the way out.
package enum Misuse {
    @inline(never)
    package static func reentrantSync(label: String, chain: [String]) -> Never {
        preconditionFailure("""
            SerialQueue "\(label)": sync called from work already running on it \
            (this thread holds \(chain.map { "\"\($0)\"" }.joined(separator: " → "))); it would deadlock. \
            Call the body directly, or use async.
            """)
    }

    @inline(never)
    package static func overResume(label: String) -> Never {
        preconditionFailure("""
            SerialQueue "\(label)": resume() called more often than suspend(); \
            every resume must match an earlier suspend.
            """)
    }

    @inline(never)
    package static func useAfterShutdown(label: String, operation: String) -> Never {
        preconditionFailure("""
            SerialQueue "\(label)": \(operation) after shutdown; the work was rejected, not run. \
            Submit work before calling shutdown(), or use tryAsync to get an error instead of a trap.
            """)
    }

    @inline(never)
    package static func releasedWhileSuspended(label: String, count: Int) -> Never {
        preconditionFailure("""
            SerialQueue "\(label)": last reference released while suspended (suspend count \(count)); \
            its pending work could never run. Resume it, or call shutdown(.cancelPending), before releasing it.
            """)
    }

    @inline(never)
    package static func notIsolated(label: String) -> Never {
        preconditionFailure("""
            SerialQueue "\(label)": checkIsolated failed: the caller is not running on this queue \
            (neither in its async work nor inside one of its sync bodies).
            """)
    }
}

/// Errors a caller can handle instead of a trap.
public enum SerialQueueError: Error, Hashable, CustomStringConvertible {
    /// The queue had been shut down before the work was submitted; the work was not run.
    case shutDown(label: String)

    /// A sentence naming the queue and saying the work was rejected.
    public var description: String {
        switch self {
        case .shutDown(let label):
            return "SerialQueue \"\(label)\" is shut down; the work was rejected, not run"
        }
    }
}
