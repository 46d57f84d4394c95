/// Every programmer-error trap of SerialPolling, with the words crash tests match.
///
/// A message names the object, the rule that was broken, and the way out.
enum PollingMisuse {
    @inline(never)
    static func invalidPolicy(_ field: String, _ value: String, _ rule: String) -> Never {
        fatalError("""
            PollPolicy.\(field) = \(value): \(rule). Fix the policy passed to Poller.init.
            """)
    }

    @inline(never)
    static func startWhileRunning(session: UInt64) -> Never {
        fatalError("""
            Poller: start called while poll session \(session) is still running; a poller runs one \
            session at a time. cancel() it first, or start again after its outcome was delivered.
            """)
    }

    @inline(never)
    static func internalInconsistency(_ what: String) -> Never {
        fatalError("Poller: internal inconsistency (please report): \(what)")
    }
}
