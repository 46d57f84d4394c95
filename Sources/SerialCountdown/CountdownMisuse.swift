/// Every programmer-error trap of SerialCountdown, with the words crash tests match.
///
/// A message names the object, the rule that was broken, and the way out.
enum CountdownMisuse {
    @inline(never)
    static func nonPositiveInterval(_ interval: Duration) -> Never {
        fatalError("""
            CountdownManager: tick interval \(interval) is not positive; a ticker needs a positive interval. \
            Pass a duration greater than zero, such as .seconds(1).
            """)
    }

    @inline(never)
    static func negativeSuspend(_ duration: Duration) -> Never {
        fatalError("""
            VirtualBootClock: simulateSuspend(for: \(duration)) would move the clock back; a boot clock never \
            goes back. Pass a duration of zero or more.
            """)
    }

    @inline(never)
    static func internalInconsistency(_ what: String) -> Never {
        fatalError("CountdownManager: internal inconsistency (please report): \(what)")
    }
}
