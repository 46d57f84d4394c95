extension StallWatchdog {
    /// The watchdog's thread and what it guards: the watched queues (weakly), one detector per
    /// queue, and whether it sleeps. Queues armed to wake it hold it strongly until they do.
    final class Core: @unchecked Sendable {  // every mutable field is guarded by `mutex`
        private struct Watched {
            weak var queue: QueueCore?
            let id: ObjectIdentifier
            var detector: StallDetector
        }

        private let mutex = PthreadMutex()
        private let wakeUp = PthreadCondition()
        private let template: StallDetector
        private let intervalNanoseconds: UInt64
        private let report: @Sendable (Stall) -> Void
        private var watched: [Watched] = []
        /// Sleeping with no deadline until a queue gets work.
        private var isAsleep = false
        /// A queue got work since the current look began (so the look must not lead to sleep).
        private var sawWork = false
        private var isStopped = false
        /// A look is sampling its copy of `watched` (and arming the idle queues in it), unlocked.
        private var isLooking = false
        /// Queues `stopWatching` removed while a look was sampling: that look may arm them after
        /// their disarm, so it disarms them again as it ends.
        private var unwatchedDuringLook: Set<ObjectIdentifier> = []
        /// How many looks were made (for tests: an idle set must not keep this moving).
        private(set) var looks = 0
        /// Tests: called on the watchdog's thread, without the lock, as each look is about to sample
        /// the queues it copied (a test can stop watching one there) and once the look has ended.
        private var lookHook: (@Sendable (_LookPhase) -> Void)? = nil

        init(detector: StallDetector, intervalNanoseconds: UInt64, report: @escaping @Sendable (Stall) -> Void) {
            self.template = detector
            self.intervalNanoseconds = intervalNanoseconds
            self.report = report
        }

        func watch(_ queue: QueueCore) {
            let id = ObjectIdentifier(queue)
            self.mutex.withLock {
                // A released queue's entry stays until a look drops it, and a new queue may get
                // its memory, so its identifier: a dead entry is not this queue.
                self.watched.removeAll { $0.queue == nil }
                guard !self.watched.contains(where: { $0.id == id }) else { return }
                self.watched.append(Watched(queue: queue, id: id, detector: self.template))
                // A look under way copied the set before this queue: it must not end in sleep
                // (its queues all idle) before a look has sampled, and so armed, this one.
                if self.isLooking { self.sawWork = true }
                self.wakeIfAsleep()
            }
        }

        func stopWatching(_ queue: QueueCore) {
            let id = ObjectIdentifier(queue)
            self.mutex.withLock {
                self.watched.removeAll { $0.id == id }
                if self.isLooking { self.unwatchedDuringLook.insert(id) }
            }
            queue.disarmWatchdog(self)
            // A `watch` of this queue from another thread, and a look that armed it, may have
            // come between the removal and the disarm: then the disarm undid that look's arming
            // of a watched queue. Another look arms it again before the watchdog sleeps.
            self.mutex.withLock {
                guard self.watched.contains(where: { $0.id == id }) else { return }
                self.sawWork = true
                self.wakeIfAsleep()
            }
        }

        /// A watched queue that was idle got work.
        func queueBecameBusy() {
            self.mutex.withLock {
                self.sawWork = true
                self.wakeIfAsleep()
            }
        }

        /// `true` for the call that stopped it.
        func stop() -> Bool {
            self.mutex.withLock {
                guard !self.isStopped else { return false }
                self.isStopped = true
                self.wakeUp.signal()
                return true
            }
        }

        var lookCount: Int { self.mutex.withLock { self.looks } }

        var isAsleepForTesting: Bool { self.mutex.withLock { self.isAsleep } }

        func setLookHook(_ hook: (@Sendable (_LookPhase) -> Void)?) {
            self.mutex.withLock { self.lookHook = hook }
        }

        /// Under the lock, as a look ends: the queues of its copy that `stopWatching` removed while
        /// it sampled them and that are not watched again. The look may have armed them after
        /// `stopWatching` disarmed them; the caller disarms them again after unlocking, or they
        /// would stay armed for a watchdog that does not watch them (holding it alive, keeping
        /// their lock-free door closed, waking it for nothing). A `stopWatching` after this point
        /// disarms after every arm of the look.
        private func endLook(copied: [(ObjectIdentifier, QueueCore?)]) -> [QueueCore] {
            self.isLooking = false
            guard !self.unwatchedDuringLook.isEmpty else { return [] }
            var removed = self.unwatchedDuringLook
            self.unwatchedDuringLook = []
            for watched in self.watched { removed.remove(watched.id) }  // watched again since
            guard !removed.isEmpty else { return [] }
            return copied.compactMap { id, queue in removed.contains(id) ? queue : nil }
        }

        private func wakeIfAsleep() {
            if self.isAsleep {
                self.isAsleep = false
                self.wakeUp.signal()
            }
        }

        /// The watchdog thread: look every interval while some queue has work, sleep otherwise.
        func main() {
            self.mutex.lock()
            while !self.isStopped {
                if self.isAsleep {
                    self.wakeUp.wait(releasing: self.mutex)
                    continue
                }
                let deadline = MonotonicInstant(nanoseconds: ClockReads.monotonicNanoseconds() &+ self.intervalNanoseconds)
                while !self.isStopped && ClockReads.monotonicNanoseconds() < deadline.nanoseconds {
                    self.wakeUp.wait(releasing: self.mutex, until: deadline)
                }
                if self.isStopped { break }
                self.looks += 1
                self.sawWork = false
                let queues = self.watched.map { ($0.id, $0.queue) }
                let hook = self.lookHook
                self.isLooking = true
                self.mutex.unlock()
                hook?(.willSample(queues: queues.count))

                var samples: [ObjectIdentifier: StallSample] = [:]
                var allIdle = true
                for (id, queue) in queues {
                    guard let queue else { continue }
                    let (sample, isIdle) = queue.stallSample(armingIfIdle: self)
                    samples[id] = sample
                    allIdle = allIdle && isIdle
                }
                let now = ClockReads.monotonicNanoseconds()

                self.mutex.lock()
                let unwatched = self.endLook(copied: queues)
                var stalls: [Stall] = []
                self.watched.removeAll { $0.queue == nil }
                for index in self.watched.indices {
                    guard let sample = samples[self.watched[index].id] else { continue }
                    stalls += self.watched[index].detector.observe(sample, now: now)
                }
                if allIdle && !self.sawWork { self.isAsleep = true }
                if !stalls.isEmpty || !unwatched.isEmpty {
                    self.mutex.unlock()
                    // After every other step of the look: nothing of it arms them again.
                    for queue in unwatched { queue.disarmWatchdog(self) }
                    for stall in stalls {
                        self.report(stall)
                        if self.mutex.withLock({ self.isStopped }) { break }  // stopped from the report
                    }
                    self.mutex.lock()
                }
                if let hook {
                    self.mutex.unlock()
                    hook(.ended)
                    self.mutex.lock()
                }
            }
            let queues = self.watched.compactMap(\.queue)
            self.watched = []
            self.mutex.unlock()
            for queue in queues { queue.disarmWatchdog(self) }  // they let go of this core
        }
    }
}
