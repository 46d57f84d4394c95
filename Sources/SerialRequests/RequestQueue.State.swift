import SerialCore

extension RequestQueue {
    /// Something the owner must do after a decision, outside the lock, on the scheduler, in the
    /// order decisions made them.
    enum Effect: Sendable {
        /// Rebuild (if the request was built for an older credential), then send.
        /// `context` is the submitter's (see `WorkContext`), in place while sending.
        case send(
            id: RequestID, attempt: UInt64, request: Request, credential: Credential, rebuild: Bool,
            context: WorkContext.Captured?)
        /// Through the coordinator: a lease, then `Policy.refresh` and a publish; or a credential
        /// another holder published. `context` is the submitter's of the first request parked for it.
        case refresh(token: UInt64, expired: Credential, generation: UInt64, context: WorkContext.Captured?)
        case notify(@Sendable (RequestState) -> Void, RequestState)
        case complete(@Sendable (RequestResult<Response>) -> Void, RequestResult<Response>)
        case store(Request, Response)
        case armTimeout(id: RequestID, deadline: MonotonicInstant)
        case armRetry(id: RequestID, token: UInt64, deadline: MonotonicInstant)
        case armRefreshTimeout(token: UInt64, deadline: MonotonicInstant)
        /// After a failed background refresh: dispatch again then, to retry it.
        case armBackgroundRetry(deadline: MonotonicInstant)
        case cancelTimer(DelayedWork)
    }

    /// One submitted, unfinished request.
    struct Entry {
        enum Phase: Equatable {
            /// In its priority's pending list, its token in `State.queued`.
            case queued
            /// Sent as `attempt`, with the credential of `generation`.
            case running(attempt: UInt64, generation: UInt64)
            /// Waiting out a retry backoff; `token` names the timer.
            case waitingRetry(token: UInt64)
            /// Waiting for the credential refresh (after meeting an expired credential, or before
            /// its send when the credential is known to have expired).
            case parked
        }

        let id: RequestID
        let priority: RequestPriority
        let kind: RequestKind?
        let submittedAt: MonotonicInstant
        let timeout: Duration?
        let handle: RequestHandle
        let observer: (@Sendable (RequestState) -> Void)?
        let completion: @Sendable (RequestResult<Response>) -> Void
        /// The submitter's context, in place around each attempt (see `WorkContext`).
        let context: WorkContext.Captured?
        /// The credential generation `request` was built (or last rebuilt) for.
        var builtGeneration: UInt64
        var phase: Phase = .queued
        var state: RequestState = .initial
        var retries = 0
        var redirects = 0
        var timeoutTimer: DelayedWork? = nil
        var retryTimer: DelayedWork? = nil
        /// Last: the one field whose size depends on `Transport`. Every field before it sits at
        /// an offset known when compiling, so the queue's unspecialized code reads them without
        /// looking the entry's type metadata up (see `State`).
        var request: Request
    }

    /// Every decision of a `RequestQueue`: a plain value, mutated under the queue's lock, that
    /// never calls out. Each mutation appends the effects it implies to `effects`, in order.
    ///
    /// - Invariant: `runningCount` counts running entries (the refresh has its own slot) and never
    ///   exceeds `maximumConcurrent`; `runningKinds` holds exactly the kinds of running entries,
    ///   each once; `uniqueRunning` is true exactly when a unique entry runs, and then it runs
    ///   alone; a parked entry implies an active refresh; after shutdown no entry remains.
    struct State {
        let configuration: Configuration
        var entries: [RequestID: Entry] = [:]
        /// Pending lists by `RequestPriority.rawValue`.
        var lists = [PendingList](repeating: PendingList(), count: 4)
        /// The queue token of every queued request: a pending-list slot is live when it matches.
        var queued: [RequestID: UInt64] = [:]
        var runningCount = 0
        var runningKinds: Set<RequestKind> = []
        var uniqueRunning = false
        /// `Policy.refresh` calls out (they outlive a shutdown), and who waits for their end.
        var calls = CredentialCalls()
        var parked: [RequestID] = []
        var refreshTimer: DelayedWork? = nil
        /// The wake-up that tries a failed background refresh again, if one is armed.
        var backgroundRetryTimer: DelayedWork? = nil
        var nextID: UInt64 = 1
        var nextToken: UInt64 = 1
        var lastSubmittedAt = MonotonicInstant(nanoseconds: 0)
        /// Why submissions are refused (`.shutDown` or `.schedulerShutDown`); `nil` while open.
        var refusal: RequestError? = nil
        var isShutDown: Bool { self.refusal != nil }
        /// Set once the scheduler stopped for good: effects are performed on the thread that
        /// learnt it (or a later caller's), never again on the scheduler.
        var schedulerGone: SchedulingError? = nil
        var effects: [Effect] = []
        var drainScheduled = false
        /// Whether the drain claim is held by a thread draining outside the scheduler (after the
        /// scheduler refused work), rather than by drain work given to the scheduler.
        var drainingInline = false
        /// Withdrawn when the queue is released.
        var shutdownSubscription: ShutdownSubscription? = nil
        var statistics = RequestQueueStatistics()
        /// How long credentials last, when the policy knows.
        let lifetime: CredentialLifetime?
        /// The jitter of the wait after a failed background refresh.
        var random = SystemRandomNumberGenerator()
        /// Last: the one field whose size depends on `Transport` (it holds a `Credential`). This
        /// code is not specialized for the transport (it lives in another module than the
        /// transports), so a field behind a field of unknown size has its offset looked up in the
        /// type's metadata at each access; in front of it, offsets are known when compiling.
        var credentials: CredentialRefresh<Credential>

        init(
            configuration: Configuration, credential: Credential, generation: UInt64 = 0,
            lifetime: CredentialLifetime? = nil, expiresAt: MonotonicInstant? = nil,
            now: MonotonicInstant
        ) {
            self.configuration = configuration
            self.lifetime = lifetime
            self.credentials = CredentialRefresh(
                credential: credential, generation: generation, limit: configuration.refreshLimit,
                window: configuration.refreshWindow, expiresAt: lifetime == nil ? nil : expiresAt,
                margin: lifetime?.refreshMargin ?? .zero, backgroundInterval: lifetime?.retryInterval ?? .seconds(5),
                installedAt: now)
        }

        // MARK: Effects hand-off

        /// Claims the right to drain: `true` when effects wait and no drain is scheduled or running.
        @inline(__always)  // hot path: a call of unspecialized generic code looks its metadata up again
        mutating func claimDrain() -> Bool {
            if self.effects.isEmpty || self.drainScheduled { return false }
            self.drainScheduled = true
            return true
        }

        /// Swaps the effects decided so far into `taken` (which the caller emptied, keeping its
        /// capacity, so the next decisions append without allocating); `false` (releasing the
        /// drain claim) when there are none.
        @inline(__always)
        mutating func takeEffects(into taken: inout [Effect]) -> Bool {
            if self.effects.isEmpty {
                self.drainScheduled = false
                self.drainingInline = false
                return false
            }
            swap(&self.effects, &taken)
            return true
        }

        @inline(__always)
        mutating func makeToken() -> UInt64 {
            defer { self.nextToken += 1 }
            return self.nextToken
        }

        // MARK: Caller operations

        /// Accepts a request (or, after shutdown, ends it at once) and starts what may start.
        mutating func submit(
            _ request: Request, priority: RequestPriority, kind: RequestKind?, timeout: Duration?,
            observer: (@Sendable (RequestState) -> Void)?,
            completion: @escaping @Sendable (RequestResult<Response>) -> Void,
            context: WorkContext.Captured?, owner: any RequestCancelling, now: MonotonicInstant
        ) -> RequestHandle {
            let id = RequestID(self.nextID)
            self.nextID += 1
            self.statistics.submitted += 1
            let handle = RequestHandle(id: id, priority: priority, kind: kind, owner: owner)
            if let refusal = self.refusal {
                handle.setState(.failure)
                if let observer { self.effects.append(.notify(observer, .failure)) }
                self.effects.append(.complete(completion, .failure(refusal)))
                self.statistics.failed += 1
                return handle
            }
            // Submission instants never go back, so each pending list stays ordered by age too.
            let submittedAt = max(now, self.lastSubmittedAt)
            self.lastSubmittedAt = submittedAt
            var entry = Entry(
                id: id, priority: priority, kind: kind, submittedAt: submittedAt, timeout: timeout,
                handle: handle, observer: observer, completion: completion, context: context,
                builtGeneration: self.credentials.generation, request: request)
            self.enqueue(&entry)
            self.entries[id] = entry
            if let timeout {
                self.effects.append(.armTimeout(id: id, deadline: submittedAt.advanced(by: timeout)))
            }
            self.dispatch(now: now)
            self.checkInvariants()
            return handle
        }

        /// Ends request `id` with `.cancelled` if it has not ended.
        mutating func cancel(_ id: RequestID, now: MonotonicInstant) -> Bool {
            guard self.entries[id] != nil else { return false }
            self.statistics.cancelled += 1
            self.finish(id, .failure(.cancelled))
            self.dispatch(now: now)
            self.checkInvariants()
            return true
        }

        /// Ends every unfinished request with `.shutDown`, in submission order; returns how many.
        mutating func shutdown() -> Int {
            if self.isShutDown { return 0 }
            return self.endAll(with: .shutDown)
        }

        /// The scheduler stopped for good: ends every unfinished request with
        /// `.schedulerShutDown(reason)`, refuses later submissions the same way, and drops the
        /// effects that would need the scheduler (sends, refreshes, timers). Idempotent.
        ///
        /// - Returns: How many requests it ended.
        mutating func schedulerShutDown(_ reason: SchedulingError) -> Int {
            guard self.schedulerGone == nil else { return 0 }
            self.schedulerGone = reason
            let ended = self.endAll(with: .schedulerShutDown(reason))
            // Their requests have ended; an answer would be ignored and a timer never fires.
            self.effects.removeAll { effect in
                switch effect {
                case .send, .refresh, .armTimeout, .armRetry, .armRefreshTimeout, .armBackgroundRetry: return true
                case .notify, .complete, .store, .cancelTimer: return false
                }
            }
            return ended
        }

        /// Ends every unfinished request with `error`, in submission order, and refuses later
        /// submissions with it.
        private mutating func endAll(with error: RequestError) -> Int {
            self.refusal = error
            let ids = self.entries.keys.sorted()
            for id in ids { self.finish(id, .failure(error)) }
            // Its answer will be ignored; every request it could hold back has ended.
            self.credentials.abandon()
            if let timer = self.refreshTimer {
                self.refreshTimer = nil
                self.effects.append(.cancelTimer(timer))
            }
            if let timer = self.backgroundRetryTimer {
                self.backgroundRetryTimer = nil
                self.effects.append(.cancelTimer(timer))
            }
            for index in self.lists.indices { self.lists[index].removeAll() }
            self.queued.removeAll()
            self.parked.removeAll()
            self.checkInvariants()
            return ids.count
        }

        // MARK: Answers and timers

        /// The request of attempt `attempt` of `id` if it is still in flight (to classify it
        /// outside the lock); `nil` for a late or duplicate answer, which is counted and ignored.
        @inline(__always)
        mutating func requestInFlight(_ id: RequestID, attempt: UInt64) -> Request? {
            if let entry = self.entries[id], case .running(attempt, _) = entry.phase { return entry.request }
            self.statistics.ignoredAnswers += 1
            return nil
        }

        /// Stores a request rebuilt for a newer credential; `false` if its attempt already ended.
        mutating func storeRebuilt(_ id: RequestID, attempt: UInt64, request: Request) -> Bool {
            guard let entry = self.entries[id], case .running(attempt, _) = entry.phase else { return false }
            self.entries[id]!.request = request
            return true
        }

        /// Applies the classified answer of attempt `attempt` of `id`.
        mutating func receive(
            _ id: RequestID, attempt: UInt64, outcome: Result<Response, any Error>,
            disposition: ResponseDisposition, cached: Response?, now: MonotonicInstant
        ) {
            guard var entry = self.entries[id], case .running(attempt, let generation) = entry.phase else {
                self.statistics.ignoredAnswers += 1
                return
            }
            switch disposition {
            case .success:
                switch outcome {
                case .success(let response):
                    self.effects.append(.store(entry.request, response))
                    self.finish(id, .success(response))
                case .failure(let error):
                    self.finish(id, .failure(.failed(error)))
                }
            case .failure(let error):
                self.finish(id, .failure(.failed(error)))
            case .useCache:
                if let cached {
                    self.finish(id, .cached(cached))
                } else {
                    self.finish(id, .failure(.cacheMiss))
                }
            case .retry(let error):
                guard entry.retries < self.configuration.maximumRetries else {
                    self.finish(id, .failure(.retriesExhausted(attempts: entry.retries + 1, last: error)))
                    break
                }
                self.releaseSlot(of: entry)
                entry.retries += 1
                let token = self.makeToken()
                entry.phase = .waitingRetry(token: token)
                self.setState(&entry, .retry)
                self.entries[id] = entry
                self.statistics.retries += 1
                let delay = self.configuration.retryBackoff.delay(beforeRetry: entry.retries)
                self.effects.append(.armRetry(id: id, token: token, deadline: now.advanced(by: delay)))
            case .credentialExpired:
                self.statistics.expiries += 1
                entry.redirects += 1
                guard entry.redirects <= self.configuration.maximumRedirects else {
                    self.finish(id, .failure(.tooManyRedirects(limit: self.configuration.maximumRedirects)))
                    break
                }
                let decision = self.credentials.credentialExpired(
                    sentGeneration: generation, now: now, token: self.makeToken())
                switch decision {
                case .limitExceeded:
                    self.statistics.refreshesRefused += 1
                    self.finish(
                        id,
                        .failure(.refreshLimitExceeded(
                            limit: self.configuration.refreshLimit, window: self.configuration.refreshWindow)))
                case .resend:
                    self.releaseSlot(of: entry)
                    self.statistics.resentWithoutRefresh += 1
                    self.setState(&entry, .redirect)
                    self.enqueue(&entry)
                    self.entries[id] = entry
                case .park, .parkAndRefresh:
                    self.releaseSlot(of: entry)
                    entry.phase = .parked
                    self.setState(&entry, .redirect)
                    self.entries[id] = entry
                    self.parked.append(id)
                }
            }
            self.dispatch(now: now)
            self.checkInvariants()
        }

        /// Applies the refresh's answer, if `token` is the running refresh's; `expiresAt` is the new
        /// credential's expiry, when known.
        mutating func refreshAnswered(
            token: UInt64, result: Result<CoordinatedCredential<Credential>, any Error>, expiresAt: MonotonicInstant?,
            now: MonotonicInstant
        ) {
            switch result {
            case .success(let new):
                guard self.credentials.succeeded(
                    token: token, credential: new.credential, generation: new.generation, expiresAt: expiresAt, now: now)
                else {
                    self.statistics.ignoredAnswers += 1
                    return
                }
                self.statistics.refreshesSucceeded += 1
                if new.adopted { self.statistics.credentialsAdopted += 1 }
                self.statistics.publishesRefused += new.refusedPublishes
                self.endRefresh()
                // Parked requests go back to their places in priority and submission order.
                let parked = self.parked
                self.parked.removeAll()
                for id in parked {
                    guard var entry = self.entries[id], entry.phase == .parked else { continue }
                    self.statistics.resentAfterRefresh += 1
                    self.enqueue(&entry)
                    self.entries[id] = entry
                }
            case .failure(let error):
                guard let outcome = self.credentials.failed(token: token, now: now, retryDelay: self.retryDelay()) else {
                    self.statistics.ignoredAnswers += 1
                    return
                }
                self.refreshFailed(outcome, with: .refreshFailed(error))
            }
            self.dispatch(now: now)
            self.checkInvariants()
        }

        /// The refresh `token` took longer than `refreshTimeout`: fail the parked requests.
        mutating func refreshTimedOut(token: UInt64, now: MonotonicInstant) {
            guard let outcome = self.credentials.failed(token: token, now: now, retryDelay: self.retryDelay()) else {
                return
            }
            self.refreshTimer = nil
            self.refreshFailed(outcome, with: .refreshTimedOut(after: self.configuration.refreshTimeout))
            self.dispatch(now: now)
            self.checkInvariants()
        }

        /// Request `id`'s timeout fell due.
        mutating func timeoutFired(_ id: RequestID, now: MonotonicInstant) {
            guard var entry = self.entries[id], let timeout = entry.timeout else { return }
            entry.timeoutTimer = nil  // it is running now; nothing to cancel
            self.entries[id] = entry
            self.statistics.timedOut += 1
            self.finish(id, .failure(.timedOut(after: timeout)))
            self.dispatch(now: now)
            self.checkInvariants()
        }

        /// Request `id`'s retry backoff `token` ended: queue it again.
        mutating func retryDue(_ id: RequestID, token: UInt64, now: MonotonicInstant) {
            guard var entry = self.entries[id], entry.phase == .waitingRetry(token: token) else { return }
            entry.retryTimer = nil
            self.enqueue(&entry)
            self.entries[id] = entry
            self.dispatch(now: now)
            self.checkInvariants()
        }

        /// Keeps the timeout timer of `id` (to cancel it when the request ends first).
        mutating func attachTimeoutTimer(_ work: DelayedWork, to id: RequestID) -> Bool {
            guard self.entries[id] != nil else { return false }
            self.entries[id]!.timeoutTimer = work
            return true
        }

        /// Keeps the retry timer `token` of `id`.
        mutating func attachRetryTimer(_ work: DelayedWork, to id: RequestID, token: UInt64) -> Bool {
            guard let entry = self.entries[id], entry.phase == .waitingRetry(token: token) else { return false }
            self.entries[id]!.retryTimer = work
            return true
        }

        /// Keeps the timeout timer of refresh `token`.
        /// Keeps the background retry's wake-up so a shutdown can cancel it; `false` (the caller
        /// cancels it) once the queue has shut down, or when another one is already armed.
        mutating func attachBackgroundRetryTimer(_ work: DelayedWork) -> Bool {
            guard self.refusal == nil, self.backgroundRetryTimer == nil else { return false }
            self.backgroundRetryTimer = work
            return true
        }

        /// The background retry's wake-up fired: it is no longer armed.
        mutating func backgroundRetryFired() {
            self.backgroundRetryTimer = nil
        }

        mutating func attachRefreshTimer(_ work: DelayedWork, token: UInt64) -> Bool {
            guard self.credentials.isRunning(token) else { return false }
            self.refreshTimer = work
            return true
        }

        // MARK: Transitions

        @inline(__always)
        private mutating func enqueue(_ entry: inout Entry) {
            let token = self.makeToken()
            entry.phase = .queued
            self.queued[entry.id] = token
            self.lists[entry.priority.rawValue].insert(
                PendingList.Slot(id: entry.id, token: token, kind: entry.kind, submittedAt: entry.submittedAt))
        }

        @inline(__always)
        private mutating func setState(_ entry: inout Entry, _ state: RequestState) {
            guard entry.state != state else { return }
            entry.state = state
            entry.handle.setState(state)
            if let observer = entry.observer { self.effects.append(.notify(observer, state)) }
        }

        @inline(__always)
        private mutating func releaseSlot(of entry: Entry) {
            self.runningCount -= 1
            if let kind = entry.kind { self.runningKinds.remove(kind) }
            if entry.priority == .unique { self.uniqueRunning = false }
        }

        private mutating func endRefresh() {
            if let timer = self.refreshTimer {
                self.refreshTimer = nil
                self.effects.append(.cancelTimer(timer))
            }
        }

        /// The wait before another background refresh after a failed one.
        private mutating func retryDelay() -> Duration {
            self.lifetime?.retryDelay(using: &self.random) ?? .zero
        }

        /// A refresh ended without a credential: the parked requests fail with `error`, or (a
        /// background refresh of a valid credential) nothing fails and it is tried again later.
        private mutating func refreshFailed(_ outcome: CredentialRefresh<Credential>.FailureOutcome, with error: RequestError) {
            self.statistics.refreshesFailed += 1
            self.endRefresh()
            switch outcome {
            case .failParked:
                self.failParked(with: error)
            case .keepServing(let retryAt):
                self.statistics.backgroundRefreshesFailed += 1
                self.effects.append(.armBackgroundRetry(deadline: retryAt))
            }
        }

        /// Ends every parked request with `error`, each once.
        mutating func failParked(with error: RequestError) {
            let parked = self.parked
            self.parked.removeAll()
            for id in parked {
                guard let entry = self.entries[id], entry.phase == .parked else { continue }
                self.finish(id, .failure(error))
            }
        }

        /// The credential is known to have expired: every queued request parks for the refresh
        /// instead of being sent with it.
        mutating func parkQueued() {
            for id in self.queued.keys.sorted() {
                guard var entry = self.entries[id] else { continue }
                self.queued[id] = nil
                entry.phase = .parked
                self.setState(&entry, .redirect)
                self.entries[id] = entry
                self.parked.append(id)
                self.statistics.heldForExpiry += 1
            }
        }

        /// Removes `id` and emits its final state and its one completion.
        @inline(__always)
        mutating func finish(_ id: RequestID, _ result: RequestResult<Response>) {
            guard var entry = self.entries.removeValue(forKey: id) else {
                RequestQueueMisuse.internalInconsistency("finishing \(id), which is not in the queue", state: "\(self)")
            }
            if case .running = entry.phase { self.releaseSlot(of: entry) }
            if entry.phase == .queued { self.queued[id] = nil }
            if let timer = entry.timeoutTimer { self.effects.append(.cancelTimer(timer)) }
            if let timer = entry.retryTimer { self.effects.append(.cancelTimer(timer)) }
            self.setState(&entry, result.state)
            self.effects.append(.complete(entry.completion, result))
            switch result {
            case .success: self.statistics.succeeded += 1
            case .cached: self.statistics.servedFromCache += 1
            case .failure: self.statistics.failed += 1
            }
        }

        /// Marks `id` running as a new attempt and emits its send.
        @inline(__always)
        mutating func start(_ id: RequestID) {
            guard var entry = self.entries[id] else {
                RequestQueueMisuse.internalInconsistency("starting \(id), which is not in the queue", state: "\(self)")
            }
            let attempt = self.makeToken()
            let generation = self.credentials.generation
            self.queued[id] = nil
            entry.phase = .running(attempt: attempt, generation: generation)
            self.runningCount += 1
            if let kind = entry.kind { self.runningKinds.insert(kind) }
            if entry.priority == .unique { self.uniqueRunning = true }
            let rebuild = entry.builtGeneration < generation
            entry.builtGeneration = generation
            self.setState(&entry, .running)
            self.entries[id] = entry
            self.statistics.sends += 1
            self.effects.append(
                .send(id: id, attempt: attempt, request: entry.request, credential: self.credentials.credential,
                      rebuild: rebuild, context: entry.context))
        }
    }
}
