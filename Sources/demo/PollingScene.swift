import SerialRuntime
import Synchronization

/// Poll a long-running job until it reports 100%. The server answers after random delays;
/// attempt 3 finds it busy and every fourth answer repeats the last one, so each run shows a
/// retry and an unchanged answer that prints no update. The poller never has two queries in
/// flight, waits no longer than it must, and ends exactly once.
enum PollingScene {
    private struct Busy: PollRetryHint {
        var retryAfter: Duration? { .milliseconds(150) }
    }

    static func run() async {
        print("== Polling: a job's progress until done ==")
        let queue = SerialQueue(label: "demo.poll")
        let server = SerialQueue(label: "demo.server")
        let progress = Mutex((value: 0, answers: 0))
        let unchanged = Atomic<Int>(0)
        let updates = Atomic<Int>(0)
        let queries = Atomic<Int>(0)
        let inFlight = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let policy = PollPolicy(
            interval: .milliseconds(100), attemptTimeout: .milliseconds(400), deadline: .seconds(10),
            backoff: .init(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(400), maximumConsecutiveErrors: 4))
        let poller = Poller<Int>(
            policy: policy, scheduler: queue, isDone: { $0 >= 100 }, changes: .equality, progress: { Double($0) },
            query: .completion { attempt, reply in
                queries.add(1, ordering: .relaxed)
                if inFlight.add(1, ordering: .relaxed).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
                // The simulated server: 20–180 ms per answer; the job grows by 5–20 points, except
                // that every fourth answer repeats the last one; attempt 3 gets "503 busy, retry
                // after 150 ms".
                server.asyncAfter(delay: .milliseconds(Int64.random(in: 20...180))) {
                    inFlight.subtract(1, ordering: .relaxed)
                    if attempt.number == 3 {
                        print("  · attempt \(attempt.number): server busy, it asks to retry after 150 ms")
                        reply(.failure(Busy()))
                        return
                    }
                    let (value, same) = progress.withLock { state -> (Int, Bool) in
                        state.answers += 1
                        let same = state.answers % 4 == 0
                        if !same { state.value = min(100, state.value + Int.random(in: 5...20)) }
                        return (state.value, same)
                    }
                    if same {
                        unchanged.add(1, ordering: .relaxed)
                        print(
                            "  · attempt \(attempt.number): answered \(value)% again: unchanged, so no progress line for it")
                    }
                    reply(.success(value))
                }
            })
        let start = MonotonicInstant.now()
        do {
            for try await percent in poller.updates {
                let elapsed = (MonotonicInstant.now() - start).components
                let milliseconds = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
                updates.add(1, ordering: .relaxed)
                print("  \(Self.bar(percent)) \(String(percent).leftPadded(to: 3))%   at \(milliseconds) ms")
            }
            let answers = progress.withLock { $0.answers }
            print("  done after \(queries.load(ordering: .relaxed)) queries: 1 busy, \(answers) answers, "
                + "\(updates.load(ordering: .relaxed)) updates printed; two queries in flight at once: "
                + "\(overlaps.load(ordering: .relaxed)) times")
        } catch {
            print("  the poll ended without finishing: \(error)")
        }
        queue.shutdown()
        server.shutdown()
        print("The \(unchanged.load(ordering: .relaxed)) unchanged answers (·) printed no update; "
            + "\(overlaps.load(ordering: .relaxed) == 0 ? "every query started after the previous answer" : "QUERIES OVERLAPPED").\n")
    }

    /// `[#####.....]`, one mark per 5%.
    static func bar(_ percent: Int) -> String {
        let filled = max(0, min(20, percent / 5))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 20 - filled) + "]"
    }
}
