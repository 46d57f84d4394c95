/// The sleeping stall watchdogs an idle queue must wake when it gets work: any number of them,
/// each armed and disarmed on its own, so that every watchdog watching a queue hears of its
/// work and stopping one changes nothing for the others.
///
/// The first one armed sits in a field of its own: the producers' hot path asks only whether
/// that field is empty (one load, as when a queue had a single slot), and a queue watched by
/// one watchdog, the usual case, allocates nothing.
///
/// - Invariant: `first == nil` implies `others.isEmpty`; no watchdog appears twice.
struct ArmedWatchdogs {
    private var first: StallWatchdog.Core? = nil
    private var others: [StallWatchdog.Core] = []

    /// No watchdog waits to be woken.
    @inline(__always)
    var isEmpty: Bool { self.first == nil }

    /// Arms `watchdog` (arming an armed one does nothing).
    mutating func arm(_ watchdog: StallWatchdog.Core) {
        guard let first = self.first else {
            self.first = watchdog
            return
        }
        if first === watchdog || self.others.contains(where: { $0 === watchdog }) { return }
        self.others.append(watchdog)
    }

    /// Disarms `watchdog` only, returning it if it was armed (to be released outside the lock).
    mutating func disarm(_ watchdog: StallWatchdog.Core) -> StallWatchdog.Core? {
        if self.first === watchdog {
            self.first = self.others.isEmpty ? nil : self.others.removeFirst()
            return watchdog
        }
        guard let index = self.others.firstIndex(where: { $0 === watchdog }) else { return nil }
        return self.others.remove(at: index)
    }

    /// Whether `watchdog` is armed (tests).
    func contains(_ watchdog: StallWatchdog.Core) -> Bool {
        self.first === watchdog || self.others.contains(where: { $0 === watchdog })
    }

    /// Takes every armed watchdog, leaving none, for the caller to wake after unlocking.
    @inline(__always)
    mutating func takeAll() -> ArmedWatchdogs {
        guard _slowPath(self.first != nil) else { return ArmedWatchdogs() }
        defer { self = ArmedWatchdogs() }
        return self
    }

    /// Tells each watchdog taken that its queue got work. Call without holding the queue's lock.
    @inline(__always)
    func wake() {
        guard _slowPath(self.first != nil) else { return }
        self.first?.queueBecameBusy()
        for watchdog in self.others { watchdog.queueBecameBusy() }
    }
}
