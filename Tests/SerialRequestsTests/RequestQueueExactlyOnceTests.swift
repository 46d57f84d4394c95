import SerialCore
import SerialRequests
import SerialTestSupport
import SerialTesting
import Testing

@Suite("RequestQueue exactly-once completion under a random workload", .onItsOwnThread)  // CPU-bound for seconds: off the cooperative threads
struct RequestQueueExactlyOnceTests {
    /// 20,000 requests per seed by default (a debug build spends about 0.1-0.2 ms per request);
    /// `STRESS_SCALE=2.5` runs the full 100,000 over the two seeds. Random priorities, kinds, timeouts, latencies
    /// and server scripts (success, retryable, fatal, connection loss, cache, expiry, silence),
    /// mixed with random cancels, token expiries, failing refreshes and time steps; then shutdown.
    /// Every request must complete exactly once, with a final state matching its result.
    @Test(arguments: [0x5EED_0003 as UInt64, 0xC0FF_EE00])
    func everyRequestOfARandomWorkloadCompletesExactlyOnce(seed: UInt64) {
        let total = StressConfiguration.iterations(20_000)
        var random = SeededRandom(seed: seed)
        let harness = Harness(
            TestQueue.Configuration(
                maximumConcurrent: 16, maximumRetries: 2,
                retryBackoff: RetryBackoff(initial: .milliseconds(5), maximum: .milliseconds(50)),
                maximumRedirects: 2, refreshLimit: 5, refreshWindow: .seconds(1), refreshTimeout: .milliseconds(200),
                agingInterval: .milliseconds(100)))
        harness.server.state.withLock { $0.refreshLatency = .milliseconds(15) }
        harness.cache.entries.withLock { $0["cached"] = Reply(name: "cached", status: 200, token: -2) }
        let counts = LockedValue([UInt8](repeating: 0, count: total))
        let mismatches = LockedValue<[String]>([])
        let statuses = [200, 200, 200, 200, 200, 200, 503, -1, 500, 304, 401, 0]
        let silentFree = statuses.filter { $0 != 0 }
        // A kind serialises its requests: keep each kind's share below what one in-flight request
        // at a time can serve, or its backlog (and the test's run time) grows without bound.
        let kinds: [RequestKind?] = [nil, nil, nil, nil, nil, nil, nil, nil, nil, "a", "b", "c", "d", "e", "f"]
        var handles: [RequestHandle] = []
        var submitted = 0
        while submitted < total {
            let roll = random.next() % 100
            if roll < 60 {
                let index = submitted
                submitted += 1
                let timeout: Duration? = random.next() % 3 == 0 ? .milliseconds(10 + Int(random.next() % 300)) : nil
                // Silence (0) only where a timeout will end it: a request that never answers and
                // never times out holds its slot (and, if unique, the gate) until shutdown.
                let choices = timeout == nil ? silentFree : statuses
                let script = (0...(random.next() % 3)).map { _ in choices[Int(random.next() % UInt64(choices.count))] }
                let call = Call(
                    name: random.next() % 20 == 0 ? "cached" : "r\(index)", statuses: script,
                    latency: .milliseconds(1 + Int(random.next() % 30)))
                let priorityRoll = random.next() % 100
                let priority: RequestPriority =
                    priorityRoll < 3 ? .unique : priorityRoll < 30 ? .high : priorityRoll < 70 ? .default : .low
                let box = LockedValue<RequestHandle?>(nil)
                let handle = harness.queue.submit(
                    call, priority: priority,
                    kind: kinds[Int(random.next() % UInt64(kinds.count))], timeout: timeout
                ) { result in
                    counts.withLock { $0[index] += 1 }
                    if let handle = box.withLock({ $0 }), handle.state != result.state {
                        mismatches.withLock { $0.append("\(handle): state \(handle.state), result \(result.state)") }
                    }
                }
                box.withLock { $0 = handle }
                if handles.count < 64 { handles.append(handle) } else { handles[Int(random.next() % 64)] = handle }
            } else if roll < 68, !handles.isEmpty {
                handles[Int(random.next() % UInt64(handles.count))].cancel()
            } else if roll < 69 {
                if random.next() % 8 == 0 { harness.server.expireToken() }
            } else if roll < 70 {
                let grant = random.next() % 4 != 0
                harness.server.state.withLock { $0.refreshScript = [grant] }
            } else {
                harness.advance(.microseconds(Int(random.next() % 8000)))
            }
        }
        harness.advance(.seconds(2))
        harness.queue.shutdown()
        harness.advance(.seconds(10))

        let final = counts.withLock { $0 }
        let wrong = final.enumerated().filter { $0.element != 1 }.prefix(10)
            .map { "request \($0.offset): \($0.element)" }
        #expect(wrong.isEmpty, "seed \(seed): completions not exactly once: \(wrong)")
        #expect(mismatches.withLock { $0 }.isEmpty, "seed \(seed): \(mismatches.withLock { $0.prefix(5) })")
        let statistics = harness.queue.statistics
        #expect(statistics.completed == total, "seed \(seed): \(statistics)")
        #expect(harness.queue.unfinishedCount == 0)
        #expect(harness.scheduler.pendingCount == 0)
        // The workload really exercised the paths it is meant to.
        #expect(statistics.refreshesStarted > 0 && statistics.retries > 0 && statistics.cancelled > 0)
        #expect(statistics.timedOut > 0 && statistics.servedFromCache > 0 && statistics.resentAfterRefresh > 0)
    }
}
