import SerialRuntime
import Synchronization

/// A queue blocked by slow work, caught by the stall watchdog and reported with its label,
/// once; a healthy queue beside it is never reported.
enum StallScene {
    static func run() {
        print("== StallWatchdog: a blocked queue is reported once, with its label ==")
        let reports = Mutex<[String]>([])
        let watchdog = StallWatchdog(runningThreshold: .milliseconds(100)) { stall in
            reports.withLock { $0.append("\(stall)") }
        }
        let blocked = SerialQueue(label: "demo.blocked")
        let healthy = SerialQueue(label: "demo.healthy")
        watchdog.watch(blocked)
        watchdog.watch(healthy)
        blocked.async {
            // Slow work: waits (bounded) until the watchdog has spoken about it.
            let start = MonotonicInstant.now()
            while reports.withLock({ $0.isEmpty }) && MonotonicInstant.now() - start < .seconds(5) {
                healthy.sync {}  // the healthy queue keeps getting short work meanwhile
            }
        }
        blocked.sync {}
        watchdog.stop()
        let lines = reports.withLock { $0 }
        for line in lines { print("  reported:", line) }
        print("\(lines.count) report(s); \"demo.healthy\" ran short work all along and was never reported.\n")
    }
}
