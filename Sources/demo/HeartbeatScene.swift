import Glibc
import SerialRuntime
import Synchronization

/// Seed 000's heartbeat problem: 10,000 connections on one timing wheel, each with an idle
/// timeout pushed back in place on its traffic (`TimerHandle.reschedule`, no allocation); a
/// few go silent and time out on time.
enum HeartbeatScene {
    static func run() {
        print("== Heartbeats: 10,000 connections, one wheel, idle timeouts re-armed on traffic ==")
        let queue = SerialQueue(label: "demo.heartbeat")
        let timers = TimerService(scheduler: queue, tick: .milliseconds(1))
        let connections = 10_000
        let idle: Duration = .seconds(1)
        let silent = [17, 2_048, 4_711, 7_777, 9_999]  // these stop sending after 300–700 ms
        let timeouts = Mutex<[(connection: Int, lateness: Duration)]>([])
        // The handles, for the callbacks to read their deadline (filled before any can fire).
        let registry = Mutex<[TimerHandle]>([])
        let start = MonotonicInstant.now()
        var handles: [TimerHandle] = []
        handles.reserveCapacity(connections)
        for connection in 0..<connections {
            handles.append(try! timers.schedule(at: start + idle) {
                let now = MonotonicInstant.now()
                let due = registry.withLock { $0.indices.contains(connection) ? $0[connection].deadline : now }
                timeouts.withLock { $0.append((connection, now - due)) }
            })
        }
        registry.withLock { $0 = handles }
        var rearms = 0
        var refused = 0
        let trafficEnd = start + .milliseconds(2_500)
        var round = 0
        while MonotonicInstant.now() < trafficEnd {
            round += 1
            let now = MonotonicInstant.now()
            for connection in 0..<connections {
                // Each connection sends every ~40 ms; the silent ones stop at 300, 400, … ms.
                if connection % 4 != round % 4 { continue }
                if let index = silent.firstIndex(of: connection), now - start > .milliseconds(300 + 100 * Int64(index)) {
                    continue
                }
                let deadline = now + idle
                if handles[connection].reschedule(at: deadline) == .movedToNewDeadline {
                    rearms += 1
                } else {
                    refused += 1  // it had timed out already
                }
            }
            usleep(10_000)
        }
        let seen = timeouts.withLock { $0 }
        let worst = seen.map(\.lateness).max() ?? .zero
        print("  connections  re-arms  timeouts  worst lateness")
        print("  \(String(connections).leftPadded(to: 11))  \(String(rearms).leftPadded(to: 7))"
              + "  \(String(seen.count).leftPadded(to: 8))  \(worst)")
        let shown = seen.map(\.connection).sorted().prefix(10).map(String.init).joined(separator: ", ")
        print("  timed out: \(shown)\(seen.count > 10 ? ", …" : "") (went silent: \(silent)); re-arms too late: \(refused)\n")
        timers.stop()
        queue.shutdown()
    }
}
