#if SERIAL_SIMULATION
/// A property that must eventually hold (a liveness property, Coyote's "hot" monitor state):
/// while `holds` is false the run is hot; hot for more than `bound` consecutive scheduling
/// points, or hot when every thread has finished, the run fails as `liveness`.
///
/// Checked where invariants are (`SimulationInvariant`): at every scheduling point, under the
/// kernel's lock, with every other simulated thread stopped at a seam operation; `holds` reads
/// state directly and must not call the seam.
final class SimulationLiveness {
    let name: String
    let bound: Int
    let holds: () -> Bool
    /// The scheduling point at which the run last became hot; `nil` while the property holds.
    var hotSince: Int?

    init(name: String, bound: Int, holds: @escaping () -> Bool) {
        self.name = name
        self.bound = bound
        self.holds = holds
    }
}

extension SimulationKernel {
    /// Under the lock, at a scheduling point: ends the run when a property has been hot too long.
    func checkLiveness() {
        guard !self.liveness.isEmpty else { return }
        let step = self.scheduler.steps
        for property in self.liveness {
            if property.holds() {
                property.hotSince = nil
                continue
            }
            let since = property.hotSince ?? step
            property.hotSince = since
            if step - since > property.bound {
                self.end(.liveness, "\"\(property.name)\" did not hold for \(step - since) scheduling points "
                    + "(from step \(since); the bound is \(property.bound)): a livelock, or work that never runs")
                return
            }
        }
    }

    /// Under the lock, when every thread has finished: what is still hot, or `nil`.
    func hotAtTheEnd() -> String? {
        let hot = self.liveness.filter { !$0.holds() }.map { "\"\($0.name)\"" }
        guard !hot.isEmpty else { return nil }
        return "the run ended with \(hot.joined(separator: ", ")) not holding (every thread finished, so it never will)"
    }
}

extension SimulationRun {
    /// Registers a liveness property for the calling simulated thread's run; `false` (nothing
    /// registered) on any other thread.
    package static func registerLiveness(
        _ name: String, withinSteps bound: Int, _ holds: @escaping @Sendable () -> Bool
    ) -> Bool {
        guard let thread = SimulatedThread.current else { return false }
        let property = SimulationLiveness(name: name, bound: bound, holds: holds)
        thread.kernel.enter()
        thread.kernel.liveness.append(property)
        thread.kernel.leave()
        return true
    }
}
#endif
