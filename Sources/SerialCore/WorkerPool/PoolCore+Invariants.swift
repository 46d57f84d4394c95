#if SERIAL_SIMULATION
// The pool's invariants as the simulator checks them: at every scheduling point at which no
// simulated thread holds the pool's mutex (see `SimulationInvariant`).

extension PoolCore {
    func registerSimulationInvariants() {
        SimulationRun.registerInvariant("work conservation (pool \(self.label))", of: self, guardedBy: self.mutex) {
            $0.checkWorkConservation()
        }
    }

    /// Work conservation, as `Verification/pool.pml` states it (`CHECK_WORK_CONSERVING`), in its
    /// bounded form. While a pool thread sleeps idle: a queue waits in a `next` slot only while a
    /// thread watches the slots (spinning) or will look for work before running any (it then
    /// watches: a free thread does not sleep while a slot is filled, but it may doze, and then it
    /// watches again when the doze ends: `PoolCore.dozeNanoseconds`); and the queues and jobs in
    /// the run queue and in the threads' own run queues are never more than the threads that will
    /// look for work before running any: spinning ones, woken ones, one that re-queued a queue
    /// for itself to take (`callerWillDequeue`), and threads reserved but not yet started. A
    /// thread in a turn does not count: its work may run, or block, for any time. The one slack
    /// is a thread between filling its `next` slot or own run queue and deciding whether to wake
    /// or tell a free thread (`isPublishing`, `isPublishingLocal`).
    ///
    /// The bound, in virtual time: a watcher takes a fill it saw stay in its slot for
    /// `PoolCore.nextPatienceNanoseconds` (`watchedReads`: no more of its own clock reads than
    /// the patience holds quanta, plus two); and locality: no `next` queue is taken by another
    /// thread before it waited the patience since its fill (`earlySteal`).
    ///
    /// Reads the pool's state without its mutex: call only while nobody holds it.
    /// - Returns: `nil` when it holds, else what is wrong.
    func checkWorkConservation() -> String? {
        if let earlySteal = self.earlySteal { return earlySteal }
        let quantum = SimulatedThread.current?.kernel.limits.clockQuantumNanoseconds ?? 1_000
        let readLimit = Int(Self.nextPatienceNanoseconds / max(1, quantum)) + 2
        for (index, worker) in self.state.workers.enumerated() where worker.watchedReads > readLimit {
            return "pool thread \(index) watched a next queue for \(worker.watchedReads) of its clock reads without "
                + "taking it (the patience is \(Self.nextPatienceNanoseconds) ns: at most \(readLimit) reads)"
        }
        let idle = self.state.idleWorkers.count
        guard idle > 0 else { return nil }
        let starting = max(0, self.state.threadCount - self.state.workers.count)
        let lookers =
            self.state.spinningCount + starting + self.state.workers.reduce(0) { $0 + ($1.willLook ? 1 : 0) }
        // A dozing thread watches the slots again when its doze ends (`PoolCore.doze`).
        let nextWatchers = lookers + self.state.dozingCount
        for (index, worker) in self.state.workers.enumerated()
        where worker.hasNextForInvariantCheck && !worker.isPublishing && nextWatchers == 0 {
            return "a queue waits in pool thread \(index)'s next slot while \(idle) pool thread(s) sleep idle "
                + "and no thread watches the slots (or dozes)"
        }
        let local = self.state.workers.reduce(0) { $0 + ($1.isPublishingLocal ? 0 : $1.local.countForInvariantCheck) }
        guard self.state.runQueue.count + local <= lookers else {
            return "\(self.state.runQueue.count) runnable in the run queue and \(local) in pool threads' own run queues "
                + "while \(idle) pool thread(s) sleep idle and only \(lookers) will look "
                + "(spinning \(self.state.spinningCount), starting \(starting))"
        }
        return nil
    }

    /// Locality, checked when a watcher is about to take `owner`'s `next` queue: the fill has
    /// waited the patience in virtual time (else the pool's invariant reports it).
    func checkStealIsPatient(from owner: PoolWorker) {
        guard let kernel = SimulatedThread.current?.kernel, self.earlySteal == nil else { return }
        let waited = kernel.now &- owner.nextFilledAt
        guard waited < Self.nextPatienceNanoseconds else { return }
        self.earlySteal = "a next queue was taken by another pool thread \(waited) ns after its fill, "
            + "before the patience of \(Self.nextPatienceNanoseconds) ns (locality)"
    }
}
#endif
