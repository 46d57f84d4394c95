import SerialCore
import Synchronization

/// Where `refreshSettled` waits time out once their queue's scheduler has stopped (a generic
/// type has no static stored property): one worker thread, made the first time it is needed.
private let settleTimeouts = SerialQueue(label: "RequestQueue.refreshSettled")

/// A priority queue of requests sent through an injected transport, with single-flight credential
/// refresh, retries, a cache fallback, loop guards, cancel, timeouts and shutdown — and exactly
/// one completion per submitted request on every path.
///
/// ```swift
/// let queue = RequestQueue(transport: api, credential: token, policy: policy, scheduler: SerialQueue(label: "api"))
/// let handle = queue.submit(.profile, priority: .high, kind: "profile") { result in
///     if case .success(let response) = result { print(response) }
/// }
/// handle.cancel()
/// ```
///
/// **Ordering.** See `RequestPriority`: highest effective priority first, FIFO within a level,
/// aging against starvation, `unique` requests alone; the queue's own credential refresh holds
/// new requests back until it ends, beside the ones already in flight.
/// At most one request of each `RequestKind` and at most `maximumConcurrent` requests are in flight.
///
/// **Credentials.** When `Policy.classify` says `.credentialExpired`, the request is parked
/// (state `redirect`) and one refresh starts for the credential generation it was sent with;
/// every other request that expires meanwhile parks behind the same refresh. A request sent with
/// an older generation than the current one is sent again at once. When the refresh succeeds the
/// parked requests are rebuilt (`Policy.rebuild`) and sent again in priority order; when it fails
/// or times out each of them fails once with that error. `maximumRedirects` per request and
/// `refreshLimit` per `refreshWindow` stop loops with `RequestError`s.
///
/// **Credentials with a lifetime.** When `Policy.lifetime` tells when a credential expires, the
/// queue refreshes ahead: a stale credential (inside the refresh margin) gets one background
/// refresh while requests keep going out with it, and a failed one fails nothing while the
/// credential is valid; an expired one is never sent: requests park for the refresh, which
/// starts at once. A queue created with an expired credential refreshes before its first send.
/// See `CredentialLifetime` and `CredentialFreshness`. The refresh has a slot of its own beside
/// `maximumConcurrent`, so it never waits behind the requests waiting for it.
///
/// **Coordination.** Each refresh first asks the queue's `CredentialCoordinator` for a lease on
/// the generation that expired. With a lease it calls `Policy.refresh` and publishes the result;
/// when another holder (another queue, another process) has published a newer credential, the
/// queue adopts it without refreshing. The default coordinator is the queue's own
/// `LocalCredentialCoordinator`, which grants every request at once; share one to refresh once
/// for several queues. A new credential obtained under a lease is published even if the queue
/// gave up waiting for it (refresh timeout, shutdown): the server may already have rotated away
/// the one it replaced. `refreshSettled(within:)` waits for that publish (before closing the
/// transport or the coordinator, or exiting).
///
/// **Threads.** `submit`, `RequestHandle.cancel` and `shutdown` may be called from any thread,
/// including from inside callbacks; they decide under a lock and return at once. Everything the
/// queue calls out to — `RequestTransport.send`, the policy's closures, state observers and
/// completions — runs on `scheduler`, one call at a time, never under the lock, in the order the
/// queue decided. The scheduler must keep accepting work while requests are unfinished.
///
/// **Exactly once.** Each submitted request ends once: its completion runs exactly once, after its
/// last state notification, whether it succeeds, fails, is served from cache, is cancelled, times
/// out, the queue shuts down, or its scheduler does. Answers that arrive after that are ignored.
///
/// **Scheduler shutdown.** When `scheduler` stops for good (its `SerialQueue` shut down or
/// released), every unfinished request ends with `RequestError.schedulerShutDown(reason)` and
/// later submissions end at once the same way; nothing traps and nothing is lost, including
/// completions that had been decided but not yet delivered. Those completions and state
/// notifications then run on the thread that learnt of the shutdown, since the scheduler runs
/// nothing more: on a `SerialQueue`, its worker as its last act (inside `shutdown()`); otherwise
/// the thread whose call the scheduler refused (a `submit`, a `cancel`, a transport answer).
///
/// **Lifetime.** Work scheduled on `scheduler` and unfinished requests' handles keep the queue
/// alive; `shutdown()` ends every request, after which it can be released. The queue's shutdown
/// handler on `scheduler` holds it weakly and is withdrawn when the queue is released.
public final class RequestQueue<Transport: RequestTransport>: Sendable {
    /// The transport's request type.
    public typealias Request = Transport.Request
    /// The transport's response type.
    public typealias Response = Transport.Response
    /// The transport's credential type.
    public typealias Credential = Transport.Credential

    /// The limits this queue was created with.
    public let configuration: Configuration
    private let transport: Transport
    private let policy: Policy
    private let coordinator: any CredentialCoordinator<Credential>
    private let scheduler: any Scheduling
    private let state: LockedValue<State>

    /// Creates a queue that sends through `transport` with `credential` until it expires.
    ///
    /// - Parameters:
    ///   - transport: Sends the requests (see `RequestTransport`).
    ///   - credential: The credential requests are sent with until it expires.
    ///   - credentialGeneration: Its generation, as its coordinator published it (see
    ///     `CredentialCoordinator`); 0 when there is no shared coordinator.
    ///   - policy: What responses mean, how requests are rebuilt and credentials refreshed.
    ///   - coordinator: Who may refresh (see `CredentialCoordinator`); `nil`: the queue's own
    ///     `LocalCredentialCoordinator`, whose leases last `configuration.refreshTimeout`.
    ///   - configuration: Limits, timeouts and loop guards.
    ///   - scheduler: Where callbacks, timers and sends run: a `SerialQueue`, or a
    ///     `VirtualScheduler` in tests.
    /// - Precondition: `configuration` is valid (see `Configuration`); otherwise this traps,
    ///   naming the field.
    public init(
        transport: Transport,
        credential: Credential,
        credentialGeneration: UInt64 = 0,
        policy: Policy,
        coordinator: (any CredentialCoordinator<Credential>)? = nil,
        configuration: Configuration = Configuration(),
        scheduler: any Scheduling
    ) {
        configuration.validate()
        self.configuration = configuration
        self.transport = transport
        self.policy = policy
        self.coordinator =
            coordinator ?? LocalCredentialCoordinator(scheduler: scheduler, leaseDuration: configuration.refreshTimeout)
        self.scheduler = scheduler
        self.state = LockedValue(
            State(
                configuration: configuration, credential: credential, generation: credentialGeneration,
                lifetime: policy.lifetime, expiresAt: policy.lifetime?.expiry(credential), now: scheduler.now))
        // Weak: a long-lived scheduler must not keep released queues alive. Runs at once when the
        // scheduler has already stopped.
        let subscription = scheduler.whenShutDown { [weak self] reason in
            self?.schedulerDidShutDown(reason, afterLastWork: true)
        }
        self.state.withLock { $0.shutdownSubscription = subscription }
    }

    deinit {
        self.state.withLock { $0.shutdownSubscription }?.cancel()
    }

    /// Submits `request`; `completion` runs exactly once, on the scheduler, with its result.
    ///
    /// After `shutdown()`, the request is not sent: it ends at once with `RequestError.shutDown`
    /// (`.schedulerShutDown` once the scheduler has stopped: then `completion` runs on the
    /// calling thread before this returns).
    ///
    /// - Parameters:
    ///   - request: What to send.
    ///   - priority: See `RequestPriority`.
    ///   - kind: At most one request of a kind is in flight; `nil` means no such limit.
    ///   - timeout: The time from now within which the request must end, queueing, retries and
    ///     refreshes included (`nil`: `configuration.defaultTimeout`).
    ///   - onStateChange: Called on the scheduler with each new state, the final one included,
    ///     before the completion.
    ///   - completion: Called exactly once, on the scheduler, with the request's result.
    /// - Returns: The request's handle: its id, state, and `cancel()`.
    /// - Complexity: O(1) to queue, plus O(s) to start what may start (see `dispatch`); O(n) for
    ///   a unique request among many waiting ones.
    /// - Precondition: `timeout`, when given, is greater than zero.
    @discardableResult
    public func submit(
        _ request: Request,
        priority: RequestPriority = .default,
        kind: RequestKind? = nil,
        timeout: Duration? = nil,
        onStateChange: (@Sendable (RequestState) -> Void)? = nil,
        completion: @escaping @Sendable (RequestResult<Response>) -> Void
    ) -> RequestHandle {
        if let timeout, timeout <= .zero { RequestQueueMisuse.invalidTimeout(timeout) }
        let now = self.scheduler.now
        // Attempts, the refresh they trigger, state changes and the completion all run with the
        // submitter's context (see `WorkContext`).
        let context = WorkContext.capture()
        let observer = context.map { context in onStateChange.map { observer in
            { @Sendable state in context.run { observer(state) } } } } ?? onStateChange
        let completion = context.map { context in
            { @Sendable result in context.run { completion(result) } } } ?? completion
        let (handle, drain) = self.state.withLock { state in
            let handle = state.submit(
                request, priority: priority, kind: kind, timeout: timeout ?? self.configuration.defaultTimeout,
                observer: observer, completion: completion, context: context, owner: self, now: now)
            return (handle, state.claimDrain())
        }
        if drain { self.scheduleDrain() }
        return handle
    }

    /// Ends every unfinished request with `RequestError.shutDown` (completions run on the
    /// scheduler, in submission order) and refuses later submissions the same way. Answers that
    /// arrive afterwards are ignored. Calling it again does nothing.
    ///
    /// - Returns: How many requests it ended.
    /// - Complexity: O(n log n) in the unfinished requests.
    @discardableResult
    public func shutdown() -> Int {
        let (ended, drain) = self.state.withLock { state in (state.shutdown(), state.claimDrain()) }
        if drain { self.scheduleDrain() }
        return ended
    }

    /// Waits, at most `timeout`, until no credential refresh of this queue is out: every
    /// `Policy.refresh` it called has failed or had its new credential handed to the
    /// coordinator's `publish` and answered: accepted, refused because another holder's won, or
    /// failed with an error (the coordinator could not store it: nothing was published).
    ///
    /// Call it after `shutdown()` and before closing the transport or the coordinator, or ending
    /// the process. `shutdown` does not stop a refresh already sent: the server may have rotated
    /// the credential (with rotating refresh tokens, the old refresh token is then spent), and
    /// only its publish hands the new one to the queues and processes sharing the coordinator.
    /// Cut off before that, the next holder refreshes with a spent token. A refresh not yet sent
    /// when the queue shut down is not sent, and a lease that was not used is released (in the
    /// background: a release may still be on its way when this returns).
    ///
    /// - Parameter timeout: The longest wait (a refresh that hangs holds it up): on `scheduler`'s
    ///   clock, or in real time once the scheduler has stopped (on a queue of this library's
    ///   own, made the first time a wait outlives its scheduler: not on Swift's cooperative
    ///   threads, which other work may hold).
    /// - Returns: `true` when no refresh is out; `false` when `timeout` passed first or the
    ///   calling task was cancelled.
    public func refreshSettled(within timeout: Duration) async -> Bool {
        let waiter = self.state.withLock { $0.makeToken() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let deadline = self.scheduler.now.advanced(by: timeout)
                guard self.state.withLock({ $0.calls.wait(waiter, continuation, until: deadline) }) else {
                    return continuation.resume(returning: true)
                }
                // A cancellation that came before the continuation was kept found nothing to end.
                if Task.isCancelled { return self.stopWaiting(waiter) }
                do {
                    let timer = try self.scheduler.schedule(at: deadline) { [weak self] in self?.stopWaiting(waiter) }
                    if !self.state.withLock({ $0.calls.armed(timer, for: waiter) }) { timer.cancel() }  // ended meanwhile
                } catch {
                    self.stopWaiting(waiter, afterRealTime: timeout)
                }
            }
        } onCancel: {
            RuntimeCallback.run { self.stopWaiting(waiter) }  // under the runtime's lock: see RuntimeCallback
        }
    }

    /// Ends `waiter`'s wait with `false` if it still waits.
    private func stopWaiting(_ waiter: UInt64) {
        self.state.withLock { $0.calls.stopWaiting(waiter) }?.resume(returning: false)
    }

    /// Ends `waiter`'s wait with `false` after `delay` of real time (the scheduler has stopped:
    /// it runs no timer). The waiting task holds the queue meanwhile.
    private func stopWaiting(_ waiter: UInt64, afterRealTime delay: Duration) {
        let timer = settleTimeouts.asyncAfter(delay: delay) { [weak self] in self?.stopWaiting(waiter) }
        if !self.state.withLock({ $0.calls.armed(timer, for: waiter) }) { timer.cancel() }  // ended meanwhile
    }

    /// The counters so far (as decided; completions may still be on their way).
    public var statistics: RequestQueueStatistics { self.state.withLock { $0.statistics } }

    /// The current credential generation: the one given at init (0 by default), then the
    /// generation of each new credential (+1 per refresh, more when another holder of a shared
    /// coordinator published meanwhile).
    public var credentialGeneration: UInt64 { self.state.withLock { $0.credentials.generation } }

    /// Requests submitted and not yet ended.
    public var unfinishedCount: Int { self.state.withLock { $0.entries.count } }

    /// Requests in flight now, the credential refresh included (it has its own slot, so this may
    /// reach `maximumConcurrent + 1`).
    public var runningCount: Int {
        self.state.withLock { state in
            if case .running = state.credentials.phase { return state.runningCount + 1 }
            return state.runningCount
        }
    }

    /// Where the current credential stands now on the scheduler's clock: always `.fresh` when
    /// `Policy.lifetime` is `nil` or does not know its expiry.
    public var credentialFreshness: CredentialFreshness {
        let now = self.scheduler.now
        return self.state.withLock { $0.credentials.freshness(at: now) }
    }

    /// Requests parked behind the credential refresh.
    public var parkedCount: Int {
        self.state.withLock { state in state.entries.values.count { $0.phase == .parked } }
    }

    // MARK: Deciding, then acting on the scheduler

    /// Has the effects drained on the scheduler. The caller holds the drain claim; if the
    /// scheduler refuses (it stopped for good), the drain happens here instead.
    private func scheduleDrain() {
        do {
            try self.scheduler.execute { self.drain() }
        } catch {
            self.state.withLock { state in
                _ = state.schedulerShutDown(error)
                state.drainingInline = true
            }
            self.drain()
        }
    }

    /// The scheduler stopped for good: end every request, and deliver what is decided here.
    ///
    /// `afterLastWork`: called by the scheduler's shutdown handler, after everything it accepted
    /// ran or was dropped. A drain claim not held by an inline drainer then belongs to drain
    /// work the scheduler dropped, and is taken over here; before that point (a refusal met by
    /// some other call) a claim may belong to a drain still running on the scheduler, which
    /// will deliver what was added.
    private func schedulerDidShutDown(_ reason: SchedulingError, afterLastWork: Bool) {
        let drainHere = self.state.withLock { state -> Bool in
            _ = state.schedulerShutDown(reason)
            if afterLastWork && state.drainScheduled && !state.drainingInline && !state.effects.isEmpty {
                state.drainingInline = true
                return true
            }
            guard state.claimDrain() else { return false }
            state.drainingInline = true
            return true
        }
        if drainHere { self.drain() }
        // The scheduler cancelled its pending work, the timers of `refreshSettled` waits among it.
        let now = self.scheduler.now
        for (waiter, deadline) in self.state.withLock({ $0.calls.deadlines }) {
            self.stopWaiting(waiter, afterRealTime: now.duration(to: deadline))
        }
    }

    /// Runs the effects decided so far and any decided while it runs: on the scheduler, or on the
    /// thread that found the scheduler gone.
    private func drain() {
        var effects: [Effect] = []
        while self.state.withLock({ $0.takeEffects(into: &effects) }) {
            for effect in effects { self.perform(effect) }
            effects.removeAll(keepingCapacity: true)
        }
    }

    /// Decides with `body` under the lock, then drains here if nobody else is draining.
    /// Only from work running on the scheduler.
    @inline(__always)
    private func decideOnScheduler(_ body: (inout State, MonotonicInstant) -> Void) {
        let now = self.scheduler.now
        let drain = self.state.withLock { state in
            body(&state, now)
            return state.claimDrain()
        }
        if drain { self.drain() }
    }

    /// Rebuilds the request if it was built for an older credential, then sends it.
    private func send(_ id: RequestID, attempt: UInt64, request: Request, credential: Credential, rebuild: Bool) {
        var request = request
        if rebuild {
            request = self.policy.rebuild(request, credential)
            let stored = self.state.withLock { $0.storeRebuilt(id, attempt: attempt, request: request) }
            guard stored else { return }  // ended while it was being rebuilt
        }
        self.transport.send(request, credential: credential) { outcome in
            do throws(SchedulingError) {
                try self.scheduler.execute { self.receive(id, attempt: attempt, outcome: outcome) }
            } catch {
                // Too late: the shutdown ends the request; this answer is ignored.
                self.schedulerDidShutDown(error, afterLastWork: false)
            }
        }
    }

    private func perform(_ effect: Effect) {
        switch effect {
        case .send(let id, let attempt, let request, let credential, let rebuild, let context):
            WorkContext.run(context) {
                self.send(id, attempt: attempt, request: request, credential: credential, rebuild: rebuild)
            }
        case .refresh(let token, let expired, let generation, let context):
            WorkContext.run(context) {
                self.coordinateRefresh(
                    token: token, expired: expired, generation: generation, refusals: 0, context: context)
            }
        case .notify(let observer, let state):
            observer(state)
        case .complete(let completion, let result):
            completion(result)
        case .store(let request, let response):
            self.policy.storeResponse(request, response)
        case .armTimeout(let id, let deadline):
            guard let work = self.arm(at: deadline, { state, now in state.timeoutFired(id, now: now) }) else { return }
            if !self.state.withLock({ $0.attachTimeoutTimer(work, to: id) }) { work.cancel() }
        case .armRetry(let id, let token, let deadline):
            guard let work = self.arm(at: deadline, { state, now in state.retryDue(id, token: token, now: now) })
            else { return }
            if !self.state.withLock({ $0.attachRetryTimer(work, to: id, token: token) }) { work.cancel() }
        case .armRefreshTimeout(let token, let deadline):
            guard let work = self.arm(at: deadline, { state, now in state.refreshTimedOut(token: token, now: now) })
            else { return }
            if !self.state.withLock({ $0.attachRefreshTimer(work, token: token) }) { work.cancel() }
        case .armBackgroundRetry(let deadline):
            // No request waits for it: it holds the queue weakly (a queue nobody holds stops
            // refreshing at once, instead of calling the refresh endpoint until its token
            // expires) and a shutdown cancels it.
            do {
                let work = try self.scheduler.schedule(at: deadline) { [weak self] in
                    self?.decideOnScheduler { state, now in
                        state.backgroundRetryFired()
                        state.dispatch(now: now)
                        state.checkInvariants()
                    }
                }
                if !self.state.withLock({ $0.attachBackgroundRetryTimer(work) }) { work.cancel() }
            } catch {
                self.state.withLock { _ = $0.schedulerShutDown(error) }
            }
        case .cancelTimer(let work):
            work.cancel()
        }
    }

    /// Schedules a timer that decides with `body`; `nil` when the scheduler refused it (it stopped
    /// for good): every request then ends, and the drain running this delivers their outcomes.
    private func arm(
        at deadline: MonotonicInstant, _ body: @escaping @Sendable (inout State, MonotonicInstant) -> Void
    ) -> DelayedWork? {
        do {
            return try self.scheduler.schedule(at: deadline) { self.decideOnScheduler(body) }
        } catch {
            self.state.withLock { _ = $0.schedulerShutDown(error) }
            return nil
        }
    }

    // MARK: Refreshing through the coordinator

    /// Refresh `token`: asks the coordinator for a lease on `generation`, then refreshes and
    /// publishes, or adopts the credential another holder published. `refusals`: publishes of
    /// this refresh refused so far. `context`: the first parked request's (see `WorkContext`).
    ///
    /// `Policy.refresh` runs in `context` however the lease arrives: the grant may come inline on
    /// the thread of another queue sharing the coordinator (its release, in its request's
    /// context), from the coordinator's expiry check (in none), or on any thread of a coordinator
    /// across processes; so the context is restored here, not inherited from that thread.
    private func coordinateRefresh(
        token: UInt64, expired: Credential, generation: UInt64, refusals: Int, context: WorkContext.Captured?
    ) {
        self.coordinator.acquire(replacing: generation) { grant in
            switch grant {
            case .failure(let error):
                self.answerRefresh(token, .failure(error))
            case .success(.published(let credential, let newGeneration)):
                self.answerRefresh(
                    token,
                    .success(CoordinatedCredential(
                        credential: credential, generation: newGeneration, adopted: true, refusedPublishes: refusals)))
            case .success(.lease(let lease)):
                // The policy runs on the scheduler: at once when the lease came inline.
                let refresh: @Sendable () -> Void = {
                    WorkContext.run(context) {
                        self.refresh(token: token, expired: expired, under: lease, refusals: refusals, context: context)
                    }
                }
                // Inline only if no foreign context can leak in: with no context to restore
                // (the first parked request had none), `WorkContext.run` leaves the releasing
                // thread's (another queue's request's) in place; a hop through `execute` carries none.
                if self.scheduler.isCurrent && (context != nil || WorkContext.capture() == nil) { return refresh() }
                do throws(SchedulingError) {
                    try self.scheduler.execute(refresh)
                } catch {
                    self.coordinator.release(lease)
                    self.schedulerDidShutDown(error, afterLastWork: false)
                }
            }
        }
    }

    /// Calls `Policy.refresh` under `lease` and publishes what it gives. On the scheduler, in
    /// `context`.
    private func refresh(
        token: UInt64, expired: Credential, under lease: CredentialLease, refusals: Int,
        context: WorkContext.Captured?
    ) {
        // Given up meanwhile (timed out, shut down): the next holder may take the lease now.
        // Otherwise the call is out, under the same lock, until its credential is published:
        // a shutdown from here on does not end it (see `refreshSettled(within:)`).
        let call = self.state.withLock { state -> UInt64? in
            guard state.credentials.isRunning(token) else { return nil }
            let call = state.makeToken()
            state.calls.start(call)
            return call
        }
        guard let call else { return self.coordinator.release(lease) }
        self.policy.refresh(expired) { result in
            // Answered once: a later answer (a policy answering twice) is ignored, never
            // published nor taken for the refresh's end.
            guard self.state.withLock({ $0.calls.answer(call) }) else { return }
            switch result {
            case .failure(let error):
                self.coordinator.release(lease)
                self.endCall(call)
                self.answerRefresh(token, .failure(error))
            case .success(let credential):
                self.coordinator.publish(credential, under: lease) { outcome in
                    self.endCall(call)
                    switch outcome {
                    case .failure(let error):
                        self.answerRefresh(token, .failure(error))
                    case .success(.accepted(let newGeneration)):
                        self.answerRefresh(
                            token,
                            .success(CoordinatedCredential(
                                credential: credential, generation: newGeneration, adopted: false,
                                refusedPublishes: refusals)))
                    case .success(.refused):
                        // Superseded: ask again, for the credential that won.
                        guard self.state.withLock({ $0.credentials.isRunning(token) }) else { return }
                        self.coordinateRefresh(
                            token: token, expired: expired, generation: lease.generation, refusals: refusals + 1,
                            context: context)
                    }
                }
            }
        }
    }

    /// `call` is no longer out: its credential is published, or it failed.
    private func endCall(_ call: UInt64) {
        let settled = self.state.withLock { $0.calls.end(call) }
        for waiter in settled { waiter.resume(returning: true) }
    }

    /// The refresh's end, decided on the scheduler.
    private func answerRefresh(_ token: UInt64, _ result: Result<CoordinatedCredential<Credential>, any Error>) {
        do throws(SchedulingError) {
            try self.scheduler.execute {
                // The policy's closure runs here, on the scheduler, outside the lock.
                let expiresAt = (try? result.get()).flatMap { new in self.policy.lifetime?.expiry(new.credential) }
                self.decideOnScheduler { state, now in
                    state.refreshAnswered(token: token, result: result, expiresAt: expiresAt, now: now)
                }
            }
        } catch {
            self.schedulerDidShutDown(error, afterLastWork: false)
        }
    }

    /// An answer of the transport, on the scheduler: classify it outside the lock, then decide.
    private func receive(_ id: RequestID, attempt: UInt64, outcome: Result<Response, any Error>) {
        guard let request = self.state.withLock({ $0.requestInFlight(id, attempt: attempt) }) else { return }
        let disposition = self.policy.classify(request, outcome)
        var cached: Response? = nil
        if case .useCache = disposition { cached = self.policy.cachedResponse(request) }
        self.decideOnScheduler { state, now in
            state.receive(id, attempt: attempt, outcome: outcome, disposition: disposition, cached: cached, now: now)
        }
    }
}

extension RequestQueue: RequestCancelling {
    /// Used by `RequestHandle.cancel()`.
    package func cancel(_ id: RequestID) -> Bool {
        let now = self.scheduler.now
        let (cancelled, drain) = self.state.withLock { state in (state.cancel(id, now: now), state.claimDrain()) }
        if drain { self.scheduleDrain() }
        return cancelled
    }
}
