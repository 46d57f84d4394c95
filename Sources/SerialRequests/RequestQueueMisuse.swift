/// Every programmer-error trap of SerialRequests, with the words crash tests match.
package enum RequestQueueMisuse {
    @inline(never)
    package static func invalidConfiguration(_ field: String, _ value: String, _ rule: String) -> Never {
        fatalError("""
            RequestQueue.Configuration.\(field) is \(value); it must be \(rule). \
            Fix the configuration passed to RequestQueue.init.
            """)
    }

    @inline(never)
    package static func invalidLifetime(_ field: String, _ value: String, _ rule: String) -> Never {
        fatalError("""
            RequestQueue.CredentialLifetime.\(field) is \(value); it must be \(rule). \
            Fix the lifetime given to the queue's Policy.
            """)
    }

    @inline(never)
    package static func invalidTimeout(_ timeout: Duration) -> Never {
        fatalError("""
            RequestQueue.submit: timeout is \(timeout); it must be greater than zero. \
            Pass nil for no timeout.
            """)
    }

    @inline(never)
    package static func invalidLeaseDuration(_ duration: Duration) -> Never {
        fatalError("""
            LocalCredentialCoordinator: leaseDuration is \(duration); it must be greater than zero. \
            Pass how long a refresh may hold the lease before another caller may take it over.
            """)
    }

    @inline(never)
    package static func internalInconsistency(_ what: String, state: String) -> Never {
        fatalError("""
            RequestQueue internal inconsistency: \(what). Please report this bug with the state: \(state)
            """)
    }
}
