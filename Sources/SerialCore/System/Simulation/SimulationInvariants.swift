#if SERIAL_SIMULATION
/// A structural invariant of the runtime that the kernel checks at every scheduling point of a
/// run, so a bug is caught at the step it happens rather than when a scenario ends.
///
/// The check lives with the structure it checks (`PoolCore.checkWorkConservation`,
/// `QueueCore.checkOneBody`); the structure registers it when it is created on a simulated
/// thread. **When it runs.** At each scheduling point (every seam operation of every simulated
/// thread, after the operation updated the model and before the scheduler picks the next
/// runner), and only while no simulated thread holds `guardedBy`, the mutex guarding the state
/// it reads: a critical section may pass through states the invariant does not allow, and ends
/// before the next scheduling point at which the mutex is free. A check with no guard holds at
/// every scheduling point. The check runs on the thread at the scheduling point, under the
/// kernel's lock, with every other simulated thread stopped at a seam operation: it reads the
/// state directly and must not call the seam (no lock, no clock).
final class SimulationInvariant {
    let name: String
    /// The structure checked; the registration lapses once it is gone.
    private weak var owner: AnyObject?
    /// The mutex guarding the state checked (`nil`: the invariant holds at every point).
    private weak var guardedBy: PthreadMutex?
    private let hasGuard: Bool
    /// `nil` when the invariant holds; otherwise what is wrong, with the state that shows it.
    private let check: (AnyObject) -> String?

    init(name: String, owner: AnyObject, guardedBy: PthreadMutex?, check: @escaping (AnyObject) -> String?) {
        self.name = name
        self.owner = owner
        self.guardedBy = guardedBy
        self.hasGuard = guardedBy != nil
        self.check = check
    }

    /// Whether the structure still exists.
    var isLive: Bool { self.owner != nil }

    /// Under the kernel lock: what is broken, or `nil` (also when the guard is held: not checked).
    func evaluate(in kernel: SimulationKernel) -> String? {
        guard let owner = self.owner else { return nil }
        if self.hasGuard {
            guard let mutex = self.guardedBy else { return nil }
            let tag = mutex.simulationTag
            // A mutex not yet used in this run is free.
            if tag.generation == kernel.generation && kernel.mutexOwners[tag.id] != nil { return nil }
        }
        return self.check(owner)
    }
}

extension SimulationKernel {
    /// Under the lock, at a scheduling point: ends the run at the first broken invariant.
    func checkInvariants() {
        guard !self.invariants.isEmpty else { return }
        var lapsed = false
        for invariant in self.invariants {
            guard invariant.isLive else {
                lapsed = true
                continue
            }
            if let broken = invariant.evaluate(in: self) {
                self.end(.invariant, "invariant \"\(invariant.name)\" broken: \(broken)")
                return
            }
        }
        if lapsed { self.invariants.removeAll { !$0.isLive } }
    }
}

extension SimulationRun {
    /// Registers an invariant of `owner` for the calling simulated thread's run (see
    /// `SimulationInvariant`); does nothing on any other thread. `check` gets `owner` back and
    /// returns what is broken, or `nil`.
    static func registerInvariant<Owner: AnyObject>(
        _ name: String, of owner: Owner, guardedBy mutex: PthreadMutex?, _ check: @escaping (Owner) -> String?
    ) {
        guard let thread = SimulatedThread.current else { return }
        let invariant = SimulationInvariant(name: name, owner: owner, guardedBy: mutex) { check($0 as! Owner) }
        thread.kernel.enter()
        thread.kernel.invariants.append(invariant)
        thread.kernel.leave()
    }
}
#endif
