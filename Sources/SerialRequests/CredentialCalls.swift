import SerialCore

/// The credential calls a `RequestQueue` has out, and the tasks waiting until there are none
/// (`RequestQueue.refreshSettled(within:)`). A plain value, kept under the queue's lock.
///
/// A call is out from the moment `Policy.refresh` is called under a lease until its new
/// credential is published to the coordinator (accepted or refused) or its failure is known.
/// A queue's shutdown does not end a call: the server may already have rotated the credential,
/// and only the publish hands the new one to the other holders.
struct CredentialCalls {
    /// Calls out, each with whether `Policy.refresh` has answered it (its publish is then on
    /// its way).
    private var out: [UInt64: Bool] = [:]
    private var waiters: [UInt64: Waiter] = [:]

    struct Waiter {
        let continuation: CheckedContinuation<Bool, Never>
        /// When its wait times out, on the queue's scheduler's clock.
        let deadline: MonotonicInstant
        /// The timer that ends it at `deadline`, once armed: cancelled when the wait ends
        /// otherwise, so a program that waits often keeps no dead timers.
        var timer: DelayedWork? = nil
    }

    /// A wait's end: the continuation to resume, and its timer to cancel (outside the lock).
    struct EndedWait {
        let continuation: CheckedContinuation<Bool, Never>
        let timer: DelayedWork?

        /// Resumes the waiting task with `settled` and cancels the timer.
        func resume(returning settled: Bool) {
            self.timer?.cancel()
            self.continuation.resume(returning: settled)
        }
    }

    /// `call` (a fresh token) is out.
    mutating func start(_ call: UInt64) {
        self.out[call] = false
    }

    /// `Policy.refresh` answered `call`: `true` the first time, `false` for any later answer (a
    /// policy that answers twice), which the queue ignores ("later calls are ignored").
    mutating func answer(_ call: UInt64) -> Bool {
        guard self.out[call] == false else { return false }
        self.out[call] = true
        return true
    }

    /// Ends `call`; ending it again does nothing. Returns the waiters to resume with `true` when
    /// it was the last call out.
    mutating func end(_ call: UInt64) -> [EndedWait] {
        guard self.out.removeValue(forKey: call) != nil, self.out.isEmpty else { return [] }
        defer { self.waiters = [:] }
        return self.waiters.values.map { EndedWait(continuation: $0.continuation, timer: $0.timer) }
    }

    /// Keeps `continuation` under `waiter` (a fresh token) until no call is out or `deadline`;
    /// `false` when none is out now (the caller resumes it).
    mutating func wait(
        _ waiter: UInt64, _ continuation: CheckedContinuation<Bool, Never>, until deadline: MonotonicInstant
    ) -> Bool {
        if self.out.isEmpty { return false }
        self.waiters[waiter] = Waiter(continuation: continuation, deadline: deadline)
        return true
    }

    /// Takes back `waiter`'s continuation if it still waits (its time is up, or its task was
    /// cancelled): the caller resumes it with `false`.
    mutating func stopWaiting(_ waiter: UInt64) -> EndedWait? {
        self.waiters.removeValue(forKey: waiter).map { EndedWait(continuation: $0.continuation, timer: $0.timer) }
    }

    /// Keeps `timer` with `waiter`'s wait; `false` when the wait has already ended (the caller
    /// cancels the timer).
    mutating func armed(_ timer: DelayedWork, for waiter: UInt64) -> Bool {
        guard self.waiters[waiter] != nil else { return false }
        self.waiters[waiter]!.timer = timer
        return true
    }

    /// The waits under way and when each times out (to time them on another clock once the
    /// scheduler has stopped, cancelling their timers).
    var deadlines: [(waiter: UInt64, deadline: MonotonicInstant)] {
        self.waiters.map { ($0.key, $0.value.deadline) }
    }
}
