#if SERIAL_SIMULATION
/// What a deadlocked run prints: every thread, what it waits for, and which queues it holds.
extension SimulationKernel {
    /// Under the lock.
    func deadlockReport() -> String {
        var lines = [
            "deadlock: no thread can run and no timed wait is left "
                + "(step \(self.scheduler.steps), virtual time +\(self.elapsedDescription))"
        ]
        lines.append(contentsOf: self.threadLines())
        return lines.joined(separator: "\n")
    }

    /// Under the lock: one line per thread, what it waits for and which queues it holds. A
    /// dedicated worker holds its queue for its whole life: while no body of it runs, it is that
    /// queue's idle worker, not a holder.
    func threadLines() -> [String] {
        self.threads.map { thread in
            var line = "  \(thread.title): \(self.describeWait(of: thread))"
            guard let stack = thread.stack, thread.state != .finished else { return line }
            let held = stack.labelsOfQueuesRunningABody
            if !held.isEmpty {
                let names = held.map { "\"\($0)\"" }.joined(separator: " → ")
                line += "; holds queue\(held.count == 1 ? "" : "s") \(names)"
            } else if let idle = stack.labels.first {
                line += " (the idle worker of queue \"\(idle)\")"
            }
            return line
        }
    }

    var elapsedDescription: String {
        let nanoseconds = self.now - self.limits.startNanoseconds
        return "\(nanoseconds / 1_000) µs"
    }

    private func describeWait(of thread: SimulatedThread) -> String {
        switch thread.state {
        case .ready: return thread.id == self.running ? "running (it reports this)" : "ready (internal inconsistency: it could run)"
        case .finished: return "finished"
        case .awaitingQuiescence: return "waits for the run to settle"
        case .joining(let target): return "joins \(self.threads[target].title), which never finishes"
        case .locking(let mutex):
            let owner = self.mutexOwners[mutex].map { self.threads[$0].title } ?? "nobody"
            return "wants mutex M\(mutex), held by \(owner)"
        case .waiting(let condition, let mutex, _):
            return "waits on condition C\(condition)\(self.conditionRole(condition)) under mutex M\(mutex), "
                + "and no thread left can signal it"
        }
    }

    /// " (T2's sync turn)" when the condition is a thread's own wake-up for its turn in a queue.
    private func conditionRole(_ condition: Int) -> String {
        for thread in self.threads {
            guard let stack = thread.stack else { continue }
            let tag = stack.turnGranted.simulationTag
            if tag.generation == self.generation && tag.id == condition {
                return " (T\(thread.id)'s wake-up for its sync turn)"
            }
        }
        return ""
    }
}
#endif
