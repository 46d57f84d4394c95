import Glibc
import SerialRuntime
import Synchronization

/// Five hosts answer after random times, three well inside the timeout and two well past it
/// (so every run shows both outcomes); each gets one outcome, its answer or a timeout, from a
/// timing wheel driven by one SerialQueue.
enum TimersScene {
    static func run() {
        print("== Timers: five hosts, one timeout each, exactly one outcome ==")
        let callbacks = SerialQueue(label: "demo.timers")
        let manager = TimeoutManager<String>(scheduler: callbacks, workerCount: 5, label: "host", tick: .milliseconds(5))
        let timeout: Duration = .milliseconds(800)
        let start = MonotonicInstant.now()
        let outcomes = Atomic<Int>(0)
        let answered = Atomic<Int>(0)
        var generator = SystemRandomNumberGenerator()
        // Three fast hosts and two slow ones, shuffled: at least 200 ms from the timeout either
        // way, so a loaded machine cannot turn a fast answer into a timeout.
        let delays = [200...600, 200...600, 200...600, 1_000...1_300, 1_000...1_300]
            .map { Int.random(in: $0, using: &generator) }.shuffled(using: &generator)
        let hosts = delays.enumerated().map { ("host-\($0.offset + 1)", $0.element) }
        print("timeout \(milliseconds(timeout)) ms; hosts answer after:",
              hosts.map { "\($0.0) \($0.1) ms" }.joined(separator: ", "))

        func report(_ caller: String) -> @Sendable (TimeoutOutcome<String>) -> Void {
            { outcome in
                let at = milliseconds(MonotonicInstant.now() - start)
                switch outcome {
                case .completed(let answer):
                    if !caller.contains("2nd") { answered.add(1, ordering: .relaxed) }
                    print("  \(at.leftPadded(to: 5)) ms  \(caller): finished — \(answer)")
                case .timedOut: print("  \(at.leftPadded(to: 5)) ms  \(caller): TIMED OUT")
                case .failed(let error): print("  \(at.leftPadded(to: 5)) ms  \(caller): failed — \(error)")
                case .cancelled: print("  \(at.leftPadded(to: 5)) ms  \(caller): cancelled")
                case .schedulerShutDown(let error): print("  \(at.leftPadded(to: 5)) ms  \(caller): \(error)")
                }
                outcomes.add(1, ordering: .releasing)
            }
        }

        for (host, duration) in hosts {
            _ = try? manager.run(taskKey: host, timeout: timeout, operation: {
                usleep(UInt32(duration * 1_000))  // a blocking call, on one of the worker queues
                return "status OK after \(duration) ms"
            }, completion: report(host))
        }
        // A duplicate request for a host in flight joins it instead of asking twice.
        let joined = try? manager.run(taskKey: "host-3", timeout: timeout, operation: { "never asked" },
                                      completion: report("host-3 (2nd caller)"))
        print("a second request for host-3 was \(joined.map { "\($0)" } ?? "refused")")

        let deadline = MonotonicInstant.now() + .seconds(5)
        while outcomes.load(ordering: .acquiring) < 6 && MonotonicInstant.now() < deadline { usleep(5_000) }
        // Wait for the slow hosts' answers too, to show they are dropped, not delivered: each
        // timed-out host's answer is either dropped late or, if its worker never started it,
        // skipped.
        let finished = answered.load(ordering: .relaxed)
        let timedOut = hosts.count - finished
        let lateDeadline = MonotonicInstant.now() + .seconds(5)
        while manager.lateResultCount + manager.skippedOperationCount < timedOut && MonotonicInstant.now() < lateDeadline {
            usleep(5_000)
        }
        print("\(finished) answered in time, \(timedOut) timed out;",
              "their late answers came and were dropped: \(manager.lateResultCount)",
              "(never started: \(manager.skippedOperationCount)); outcomes delivered: \(outcomes.load(ordering: .acquiring)),",
              "one per caller.")

        // The wheel underneath: one armed wake-up however many timers wait.
        let wheelQueue = SerialQueue(label: "demo.wheel")
        let timers = TimerService(scheduler: wheelQueue)
        let fired = Atomic<Int>(0)
        let handles = (1...1_000).compactMap { index in
            try? timers.schedule(after: .seconds(3_600) + .milliseconds(Int64(index))) { fired.add(1, ordering: .relaxed) }
        }
        print("1,000 timers an hour away: \(timers.pendingCount) pending,",
              "\(wheelQueue.delayedWorkCount) delayed wake-up armed on the queue;",
              "cancelled \(handles.prefix(400).filter { $0.cancel() }.count), stop() dropped \(timers.stop()),",
              "fired \(fired.load(ordering: .relaxed)).\n")
        manager.shutdown()
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(duration.saturatingNanoseconds / 1_000_000)
    }
}
