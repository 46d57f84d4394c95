/// The credential calls a `RequestQueue` has out, and the tasks waiting until there are none
/// (`RequestQueue.refreshSettled(within:)`). A plain value, kept under the queue's lock.
///
/// A call is out from the moment `Policy.refresh` is called under a lease until its new
/// credential is published to the coordinator (accepted or refused) or its failure is known.
/// A queue's shutdown does not end a call: the server may already have rotated the credential,
/// and only the publish hands the new one to the other holders.
struct CredentialCalls {
    private var out: Set<UInt64> = []
    private var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]

    /// Whether no call is out.
    var isSettled: Bool { self.out.isEmpty }

    /// `call` (a fresh token) is out.
    mutating func start(_ call: UInt64) {
        self.out.insert(call)
    }

    /// Ends `call`; ending it again does nothing. Returns the waiters to resume with `true` when
    /// it was the last call out.
    mutating func end(_ call: UInt64) -> [CheckedContinuation<Bool, Never>] {
        guard self.out.remove(call) != nil, self.out.isEmpty else { return [] }
        defer { self.waiters = [:] }
        return Array(self.waiters.values)
    }

    /// Keeps `continuation` under `waiter` (a fresh token) until no call is out; `false` when
    /// none is out now (the caller resumes it).
    mutating func wait(_ waiter: UInt64, _ continuation: CheckedContinuation<Bool, Never>) -> Bool {
        if self.out.isEmpty { return false }
        self.waiters[waiter] = continuation
        return true
    }

    /// Takes back `waiter`'s continuation if it still waits (its time is up, or its task was
    /// cancelled): the caller resumes it with `false`.
    mutating func stopWaiting(_ waiter: UInt64) -> CheckedContinuation<Bool, Never>? {
        self.waiters.removeValue(forKey: waiter)
    }
}
