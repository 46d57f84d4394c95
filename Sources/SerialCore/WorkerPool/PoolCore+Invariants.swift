#if SERIAL_SIMULATION
// The pool's invariants as the simulator checks them: at every scheduling point at which no
// simulated thread holds the pool's mutex (see `SimulationInvariant`).

extension PoolCore {
    func registerSimulationInvariants() {
        SimulationRun.registerInvariant("work conservation (pool \(self.label))", of: self, guardedBy: self.mutex) {
            $0.checkWorkConservation()
        }
    }

    /// Work conservation, as `Verification/pool.pml` states it (`CHECK_WORK_CONSERVING`): while a
    /// pool thread sleeps idle, no queue waits in a `next` slot (a thread becoming free steals
    /// first, and a fill while a thread is free is published), and the queues and jobs in the run
    /// queue and in the threads' own run queues are never more than the threads that will look
    /// for work before running any: spinning ones, woken ones, one that re-queued a queue for
    /// itself to take (`callerWillDequeue`), and threads reserved but not yet started. A thread
    /// in a turn does not count: its work may run, or block, for any time. The one slack is a
    /// thread between filling its `next` slot or own run queue and reading `freeCount`
    /// (`isPublishing`, `isPublishingLocal`): it publishes the work, or tells, if a thread is free.
    ///
    /// Reads the pool's state without its mutex: call only while nobody holds it.
    /// - Returns: `nil` when it holds, else what is wrong.
    func checkWorkConservation() -> String? {
        let idle = self.state.idleWorkers.count
        guard idle > 0 else { return nil }
        for (index, worker) in self.state.workers.enumerated() where worker.hasNextForInvariantCheck && !worker.isPublishing {
            return "a queue waits in pool thread \(index)'s next slot while \(idle) pool thread(s) sleep idle"
        }
        let starting = max(0, self.state.threadCount - self.state.workers.count)
        let lookers =
            self.state.spinningCount + starting + self.state.workers.reduce(0) { $0 + ($1.willLook ? 1 : 0) }
        let local = self.state.workers.reduce(0) { $0 + ($1.isPublishingLocal ? 0 : $1.local.countForInvariantCheck) }
        guard self.state.runQueue.count + local <= lookers else {
            return "\(self.state.runQueue.count) runnable in the run queue and \(local) in pool threads' own run queues "
                + "while \(idle) pool thread(s) sleep idle and only \(lookers) will look "
                + "(spinning \(self.state.spinningCount), starting \(starting))"
        }
        return nil
    }
}
#endif
