import SerialCore

/// The in-process `CredentialCoordinator`: the credential, its generation and the lease live in
/// this object. A `RequestQueue` given no coordinator makes one of its own (one refresh per
/// generation within that queue); queues of one process that share one also share every refresh.
///
/// ```swift
/// let shared = LocalCredentialCoordinator<String>(scheduler: queue, leaseDuration: .seconds(30))
/// let profiles = RequestQueue(transport: api, credential: token, policy: policy, coordinator: shared, scheduler: queue)
/// let uploads = RequestQueue(transport: api, credential: token, policy: policy, coordinator: shared, scheduler: queue)
/// ```
///
/// It learns the starting generation from the first `acquire`. A lease lasts `leaseDuration` on
/// `scheduler`'s clock; callers waiting behind a live lease are answered when it is published
/// (`.published`), released or expired (the first of them gets the next lease, the rest go on
/// waiting), in the order they asked. Completions run outside its lock: at once on the calling
/// thread, or on the thread that published, released, or ran the expiry (on `scheduler`).
///
/// - Invariant: a lease is held only for the newest generation; waiters exist only behind a live
///   lease, and then an expiry check is armed for it.
public final class LocalCredentialCoordinator<Credential: Sendable>: CredentialCoordinator {
    /// What `acquire` answers.
    public typealias Grant = CredentialGrant<Credential>
    typealias Answer = @Sendable (Result<Grant, any Error>) -> Void

    struct Held {
        var lease: CredentialLease
        var expiresAt: MonotonicInstant
    }

    struct State {
        /// The newest generation (`nil` until the first `acquire`) and, once published, its credential.
        var generation: UInt64? = nil
        var credential: Credential? = nil
        var held: Held? = nil
        var nextFence: UInt64 = 1
        var waiters: [(generation: UInt64, answer: Answer)] = []
        var expiryCheck: DelayedWork? = nil
    }

    private let scheduler: any Scheduling
    /// How long a lease lasts when its holder neither publishes nor releases it.
    public let leaseDuration: Duration
    private let state = LockedValue(State())

    /// A coordinator whose leases last `leaseDuration` on `scheduler`'s clock (a queue's own
    /// coordinator uses its `refreshTimeout`).
    ///
    /// - Precondition: `leaseDuration` is greater than zero.
    public init(scheduler: any Scheduling, leaseDuration: Duration = .seconds(30)) {
        if leaseDuration <= .zero { RequestQueueMisuse.invalidLeaseDuration(leaseDuration) }
        self.scheduler = scheduler
        self.leaseDuration = leaseDuration
    }

    /// The newest generation it knows (`nil` before the first `acquire`).
    public var generation: UInt64? { self.state.withLock { $0.generation } }

    /// The lease held now, if it has not expired.
    public var currentLease: CredentialLease? {
        let now = self.scheduler.now
        return self.state.withLock { state in state.held.flatMap { $0.expiresAt > now ? $0.lease : nil } }
    }

    /// Grants a lease on `generation` at once when it is the newest and no lease is live, answers
    /// `.published` at once when a newer credential exists, and otherwise waits behind the live
    /// lease (see the type's summary).
    public func acquire(replacing generation: UInt64, completion: @escaping @Sendable (Result<Grant, any Error>) -> Void) {
        let now = self.scheduler.now
        let (answer, arm) = self.state.withLock { state -> (Result<Grant, any Error>?, MonotonicInstant?) in
            if let answer = Self.decide(generation, &state, now: now, leaseDuration: self.leaseDuration) {
                return (answer, nil)
            }
            state.waiters.append((generation, completion))
            return (nil, state.expiryCheck == nil ? state.held?.expiresAt : nil)
        }
        if let answer { completion(answer) }
        if let arm { self.armExpiryCheck(at: arm) }
    }

    /// Accepts `credential` as generation `lease.generation + 1` when `lease` is the last lease
    /// granted and its generation the newest (even if it expired meanwhile: nobody took over);
    /// answers the waiters with it. Otherwise `.refused`.
    public func publish(
        _ credential: Credential, under lease: CredentialLease,
        completion: @escaping @Sendable (Result<PublishOutcome, any Error>) -> Void
    ) {
        let now = self.scheduler.now
        let woken = self.state.withLock { state -> Woken? in
            // Fenced: refused once a newer credential exists or another lease was granted since.
            guard state.generation == lease.generation, state.nextFence == lease.fence + 1 else { return nil }
            state.generation = lease.generation + 1
            state.credential = credential
            state.held = nil
            return Self.wake(&state, now: now, leaseDuration: self.leaseDuration)
        }
        guard let woken else { return completion(.success(.refused)) }
        self.deliver(woken)
        completion(.success(.accepted(generation: lease.generation + 1)))
    }

    /// Ends `lease` if it is the one held; the first waiter gets the next lease.
    public func release(_ lease: CredentialLease) {
        let now = self.scheduler.now
        let woken = self.state.withLock { state -> Woken? in
            guard let held = state.held, held.lease == lease else { return nil }
            state.held = nil
            return Self.wake(&state, now: now, leaseDuration: self.leaseDuration)
        }
        if let woken { self.deliver(woken) }
    }

    // MARK: Deciding under the lock

    /// The answer for a caller replacing `generation`, or `nil` when it must wait behind a live lease.
    private static func decide(
        _ generation: UInt64, _ state: inout State, now: MonotonicInstant, leaseDuration: Duration
    ) -> Result<Grant, any Error>? {
        let newest = state.generation ?? generation
        state.generation = newest
        if generation > newest {
            return .failure(CredentialCoordinatorError.generationAhead(asked: generation, current: newest))
        }
        if generation < newest, let credential = state.credential {
            return .success(.published(credential, generation: newest))
        }
        if let held = state.held, held.expiresAt > now { return nil }
        let lease = CredentialLease(generation: newest, fence: state.nextFence)
        state.nextFence += 1
        state.held = Held(lease: lease, expiresAt: now.advanced(by: leaseDuration))
        return .success(.lease(lease))
    }

    /// Answers decided for waiters, and when to check again for those still waiting.
    struct Woken {
        var answers: [(Answer, Result<Grant, any Error>)] = []
        var checkAt: MonotonicInstant? = nil
        /// The check armed before, now superseded.
        var staleCheck: DelayedWork? = nil
    }

    /// Decides again for every waiter (after a publish, a release or an expiry), in the order they
    /// asked: the first may get the next lease, the others then go on waiting behind it.
    private static func wake(_ state: inout State, now: MonotonicInstant, leaseDuration: Duration) -> Woken {
        var woken = Woken(staleCheck: state.expiryCheck)
        state.expiryCheck = nil
        var waiting: [(generation: UInt64, answer: Answer)] = []
        for waiter in state.waiters {
            if let result = Self.decide(waiter.generation, &state, now: now, leaseDuration: leaseDuration) {
                woken.answers.append((waiter.answer, result))
            } else {
                waiting.append(waiter)
            }
        }
        state.waiters = waiting
        woken.checkAt = waiting.isEmpty ? nil : state.held?.expiresAt
        return woken
    }

    /// Delivers answers outside the lock, then arms the next expiry check.
    private func deliver(_ woken: Woken) {
        woken.staleCheck?.cancel()
        for (answer, result) in woken.answers { answer(result) }
        if let checkAt = woken.checkAt { self.armExpiryCheck(at: checkAt) }
    }

    /// Arms one check at `deadline` that wakes the waiters if the lease expired by then.
    private func armExpiryCheck(at deadline: MonotonicInstant) {
        let work = try? self.scheduler.schedule(at: deadline) { [weak self] in self?.expiryCheckFired() }
        let keep = self.state.withLock { state -> Bool in
            guard state.expiryCheck == nil, !state.waiters.isEmpty else { return false }
            state.expiryCheck = work
            return true
        }
        if !keep { work?.cancel() }
        if work == nil { self.failWaiters() }
    }

    private func expiryCheckFired() {
        let now = self.scheduler.now
        self.deliver(self.state.withLock { state in Self.wake(&state, now: now, leaseDuration: self.leaseDuration) })
    }

    /// The scheduler stopped: nothing can expire the lease any more; the waiters hear it now.
    private func failWaiters() {
        let waiters = self.state.withLock { state -> [(generation: UInt64, answer: Answer)] in
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.answer(.failure(SchedulingError.shutDown(scheduler: "\(self.scheduler)"))) }
    }
}
