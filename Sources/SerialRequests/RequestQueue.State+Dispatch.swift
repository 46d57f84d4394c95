import SerialCore

extension RequestQueue.State {
    /// Starts everything the rules let start now, most urgent first.
    ///
    /// 1. With a known expiry: an expired credential parks every queued request and raises the
    ///    refresh they wait for; a stale one raises one background refresh (see
    ///    `CredentialRefresh`).
    /// 2. A raised refresh starts at once, in a slot of its own beside `maximumConcurrent`: the
    ///    requests holding the slots, kinds or the unique gate may be the very ones that need it.
    ///    Until a refresh raised by a rejection or an expiry has ended, nothing else starts; a
    ///    background refresh holds nothing back.
    /// 3. Otherwise, while a unique request runs, nothing starts. While one is queued, only it may
    ///    start (the oldest), and only once nothing at all is in flight: it runs alone.
    /// 4. Otherwise requests start by effective priority (aging included), then submission order,
    ///    skipping those whose kind is in flight, until `maximumConcurrent` run.
    ///
    /// - Complexity: O(s) where s is the number of slots passed over (stale, or held back by
    ///   their kind), plus O(1) per request started; O(q log q) in the queued requests when the
    ///   credential has just expired.
    mutating func dispatch(now: MonotonicInstant) {
        guard !self.isShutDown else { return }
        self.raiseRefreshIfDue(now: now)
        if case .waiting = self.credentials.phase, let (token, expired, generation) = self.credentials.start() {
            self.statistics.refreshesStarted += 1
            let context = self.parked.first.flatMap { self.entries[$0]?.context }
            self.effects.append(.refresh(token: token, expired: expired, generation: generation, context: context))
            self.effects.append(
                .armRefreshTimeout(token: token, deadline: now.advanced(by: self.configuration.refreshTimeout)))
        }
        if self.credentials.isActive && self.credentials.holdsRequests { return }
        if self.uniqueRunning { return }

        let uniqueIndex = RequestPriority.unique.rawValue
        self.dropStaleHead(of: uniqueIndex)
        let uniqueList = self.lists[uniqueIndex]
        if uniqueList.head < uniqueList.slots.count {
            let id = uniqueList.slots[uniqueList.head].id
            if self.runningCount == 0 {
                self.start(id)
            }
            return  // the gate is raised either way: what runs drains, then the unique one starts
        }

        let aging = self.configuration.agingInterval
        var cursors = Cursors(low: self.lists[0].head, normal: self.lists[1].head, high: self.lists[2].head)
        while self.runningCount < self.configuration.maximumConcurrent {
            var best: (list: Int, id: RequestID, level: Int)? = nil
            for list in 0..<uniqueIndex {
                let slots = self.lists[list].slots
                while cursors[list] < slots.count {
                    let slot = slots[cursors[list]]
                    guard self.queued[slot.id] == slot.token else {
                        cursors[list] += 1
                        continue
                    }
                    if let kind = slot.kind, self.runningKinds.contains(kind) {
                        cursors[list] += 1  // its kind stays busy for the rest of this pass
                        continue
                    }
                    let level = RequestPriority(rawValue: list)!.effectivePriority(
                        waited: slot.submittedAt.duration(to: now), agingInterval: aging
                    ).rawValue
                    if let current = best, current.level > level || (current.level == level && current.id < slot.id) {
                        break
                    }
                    best = (list, slot.id, level)
                    break
                }
            }
            guard let chosen = best else { break }
            cursors[chosen.list] += 1
            self.start(chosen.id)
        }
        for list in 0..<uniqueIndex { self.dropStaleHead(of: list) }
    }

    /// A dispatch pass's place in each pending list below `unique` (an array here cost an
    /// allocation per pass: two passes per request).
    private struct Cursors {
        var low: Int
        var normal: Int
        var high: Int

        subscript(list: Int) -> Int {
            get { list == 0 ? self.low : list == 1 ? self.normal : self.high }
            set {
                switch list {
                case 0: self.low = newValue
                case 1: self.normal = newValue
                default: self.high = newValue
                }
            }
        }
    }

    /// With a known expiry, raises the refresh the credential's freshness calls for at `now`.
    private mutating func raiseRefreshIfDue(now: MonotonicInstant) {
        switch self.credentials.freshness(at: now) {
        case .fresh:
            return
        case .stale:
            if self.credentials.raiseInBackground(now: now, token: self.makeToken()) {
                self.statistics.refreshesAhead += 1
            }
        case .expired:
            // Never sent with it: queued requests wait for the refresh (none starts until a request needs one).
            self.parkQueued()
            guard !self.credentials.isActive, !self.parked.isEmpty else { return }
            if self.credentials.raiseForExpiry(now: now, token: self.makeToken()) {
                self.statistics.refreshesAhead += 1
            } else {
                self.statistics.refreshesRefused += 1
                self.failParked(
                    with: .refreshLimitExceeded(
                        limit: self.configuration.refreshLimit, window: self.configuration.refreshWindow))
            }
        }
    }

    private mutating func dropStaleHead(of list: Int) {
        let queued = self.queued
        self.lists[list].dropStaleHead { slot in queued[slot.id] == slot.token }
    }

    /// Walks the whole state and traps, printing it, if an invariant is broken. Compiled only
    /// with `SERIAL_INTERNAL_CHECKS` (opt-in; CI sets it), and only while the state is small (at most
    /// 32 unfinished requests and 128 pending slots), so large runs keep their complexity.
    func checkInvariants() {
        #if SERIAL_INTERNAL_CHECKS
        guard self.entries.count <= 32, self.lists.reduce(0, { $0 + $1.slots.count }) <= 128 else { return }
        if self.queued.count != self.entries.values.count(where: { $0.phase == .queued }) {
            self.inconsistent("\(self.queued.count) queue tokens for a different number of queued requests")
        }
        var running = 0
        var kinds: Set<RequestKind> = []
        var uniques = 0
        var uniqueEntryRunning = false
        for entry in self.entries.values {
            if case .running = entry.phase {
                running += 1
                if let kind = entry.kind {
                    if !kinds.insert(kind).inserted { self.inconsistent("two running requests of kind \(kind)") }
                }
                if entry.priority == .unique {
                    uniques += 1
                    uniqueEntryRunning = true
                }
            }
            if entry.phase == .parked && !self.credentials.isActive {
                self.inconsistent("\(entry.id) is parked but no refresh is active")
            }
            if entry.state.isFinal { self.inconsistent("\(entry.id) is final but still in the queue") }
        }
        if !self.credentials.isActive && self.credentials.holdsRequests {
            self.inconsistent("no refresh is active, yet one holds requests back")
        }
        if running != self.runningCount { self.inconsistent("runningCount \(self.runningCount), counted \(running)") }
        if running > self.configuration.maximumConcurrent { self.inconsistent("more than maximumConcurrent running") }
        if uniqueEntryRunning && running != 1 { self.inconsistent("a unique request runs beside \(running - 1) others") }
        if kinds != self.runningKinds { self.inconsistent("runningKinds \(self.runningKinds), counted \(kinds)") }
        if uniques > 1 || self.uniqueRunning != (uniques == 1) {
            self.inconsistent("uniqueRunning \(self.uniqueRunning) with \(uniques) unique running")
        }
        if self.isShutDown && !self.entries.isEmpty { self.inconsistent("requests left after shutdown") }
        for list in self.lists where !list.isSorted { self.inconsistent("a pending list is out of order") }
        #endif
    }

    private func inconsistent(_ what: String) -> Never {
        RequestQueueMisuse.internalInconsistency(
            what,
            state: "running \(self.runningCount), kinds \(self.runningKinds), uniqueRunning \(self.uniqueRunning), "
                + "refresh \(self.credentials.phase), generation \(self.credentials.generation), "
                + "entries \(self.entries.values.map { "\($0.id):\($0.priority):\($0.phase)" })")
    }
}
