import SerialRuntime
import Synchronization

/// Seed 002: poll a long-running job until it reports 100%. The server answers after random
/// delays and is sometimes busy; the poller never has two queries in flight, never applies a
/// stale answer, waits no longer than it must, and ends exactly once.
enum PollingScene {
    private struct Busy: PollRetryHint {
        var retryAfter: Duration? { .milliseconds(150) }
    }

    static func run() async {
        print("== Polling: a job's progress until done ==")
        let queue = SerialQueue(label: "demo.poll")
        let server = SerialQueue(label: "demo.server")
        let progress = Mutex(0)
        let queries = Atomic<Int>(0)
        let inFlight = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let policy = PollPolicy(
            interval: .milliseconds(100), attemptTimeout: .milliseconds(400), deadline: .seconds(10),
            backoff: .init(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(400), maximumConsecutiveErrors: 4))
        let poller = Poller<Int>(policy: policy, scheduler: queue, isDone: { $0 >= 100 }, progress: { Double($0) }) {
            attempt, reply in
            queries.add(1, ordering: .relaxed)
            if inFlight.add(1, ordering: .relaxed).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
            // The simulated server: 20–180 ms per answer; the job grows by 0–20 points; one
            // answer in eight is "503 busy, retry after 150 ms".
            server.asyncAfter(delay: .milliseconds(Int64.random(in: 20...180))) {
                inFlight.subtract(1, ordering: .relaxed)
                if Int.random(in: 0..<8) == 0 {
                    print("  · attempt \(attempt.number): server busy, it asks to retry after 150 ms")
                    reply(.failure(Busy()))
                    return
                }
                reply(.success(progress.withLock { value in
                    value = min(100, value + Int.random(in: 0...20))
                    return value
                }))
            }
        }
        let start = MonotonicInstant.now()
        do {
            for try await percent in poller.updates {
                let elapsed = (MonotonicInstant.now() - start).components
                let milliseconds = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
                print("  \(Self.bar(percent)) \(String(percent).leftPadded(to: 3))%   at \(milliseconds) ms")
            }
            print("  done after \(queries.load(ordering: .relaxed)) queries; two in flight at once: "
                + "\(overlaps.load(ordering: .relaxed)) times")
        } catch {
            print("  the poll ended without finishing: \(error)")
        }
        queue.shutdown()
        server.shutdown()
        print("Unchanged answers printed nothing; every query started after the previous answer.\n")
    }

    /// `[#####.....]`, one mark per 5%.
    static func bar(_ percent: Int) -> String {
        let filled = max(0, min(20, percent / 5))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 20 - filled) + "]"
    }
}
