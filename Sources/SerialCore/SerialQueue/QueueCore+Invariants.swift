#if SERIAL_SIMULATION
// The queue's invariants as the simulator checks them (see `SimulationInvariant`).

extension QueueCore {
    func registerSimulationInvariants() {
        SimulationRun.registerInvariant("one body at a time (queue \(self.label))", of: self, guardedBy: nil) {
            $0.checkOneBody()
        }
    }

    /// Mutual exclusion: at most one body of this queue runs at any time (async, delayed or
    /// executor work on the worker or a pool thread, or a `sync` body on its caller's thread).
    /// It holds at every scheduling point, whoever holds the queue's mutex: a body runs outside it.
    ///
    /// - Returns: `nil` when it holds, else what is wrong.
    func checkOneBody() -> String? {
        self.simulationBodies <= 1 ? nil : "\(self.simulationBodies) bodies of queue \"\(self.label)\" run at once"
    }
}
#endif
