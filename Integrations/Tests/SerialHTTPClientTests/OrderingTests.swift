import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import Testing

/// What the server sees of the queue's order and of unique requests.
@Suite("Priority order and unique requests end to end", .serialized)
struct OrderingTests {
    @Test("with maximumConcurrent 1 the server receives requests in priority order, FIFO within a priority, and nothing else is in flight while the unique request runs")
    func oneAtATimeInPriorityOrder() async throws {
        let configuration = HTTPQueue.Configuration(maximumConcurrent: 1, agingInterval: nil)
        try await EndToEnd.run(configuration: configuration) { e2e in
            let results = Completions<RequestResult<HTTPResponse>>()
            // The blocker takes the only slot at once; the rest queue up behind it.
            e2e.queue.submit(e2e.item(0, tag: "blocker", delayMilliseconds: 300), timeout: .seconds(20)) {
                results.record(0, $0)
            }
            let plan: [(String, RequestPriority)] = [
                ("low-1", .low), ("default-1", .default), ("high-1", .high), ("low-2", .low),
                ("unique", .unique), ("default-2", .default), ("high-2", .high), ("low-3", .low),
                ("default-3", .default), ("high-3", .high),
            ]
            for (offset, (tag, priority)) in plan.enumerated() {
                let request = e2e.item(offset + 1, tag: tag, unique: priority == .unique, delayMilliseconds: 5)
                e2e.queue.submit(request, priority: priority, timeout: .seconds(20)) { results.record(offset + 1, $0) }
            }
            #expect(await results.wait(for: plan.count + 1, timeout: .seconds(20)), "only \(results.count) ended")
            await e2e.settle()

            let counts = e2e.server.counts
            let order = counts.arrivals(of: "items").compactMap(\.tag)
            #expect(order == [
                "blocker", "unique", "high-1", "high-2", "high-3", "default-1", "default-2", "default-3",
                "low-1", "low-2", "low-3",
            ])
            #expect(counts.maximumInFlight == 1, "the server saw \(counts.maximumInFlight) requests at once")
            #expect(counts.othersInFlightWhenUniqueArrived == [0])
            #expect(counts.arrivedDuringUnique == 0)
            #expect(results.values.values.allSatisfy { $0.error == nil })
        }
    }

    @Test("with maximumConcurrent 4 a unique request reaches the server only when nothing else is in flight, and nothing arrives while it runs")
    func nothingStartsWhileAUniqueRequestRuns() async throws {
        let configuration = HTTPQueue.Configuration(maximumConcurrent: 4, agingInterval: nil)
        try await EndToEnd.run(configuration: configuration) { e2e in
            let results = Completions<RequestResult<HTTPResponse>>()
            var index = 0
            func submit(_ priority: RequestPriority, delay: Int) {
                let current = index
                index += 1
                let request = e2e.item(current, tag: "\(priority)-\(current)", unique: priority == .unique,
                                       delayMilliseconds: delay)
                e2e.queue.submit(request, priority: priority, timeout: .seconds(120)) { results.record(current, $0) }
            }
            // One of the four first requests ends long before the others: a unique request that
            // took the freed slot would reach the server with three still in flight.
            for delay in [30, 300, 300, 300] { submit(.default, delay: delay) }
            submit(.unique, delay: 150)
            for _ in 0..<8 { submit(.high, delay: 10) }
            submit(.unique, delay: 50)
            for _ in 0..<4 { submit(.default, delay: 10) }
            #expect(await results.wait(for: index, timeout: .seconds(120)), "only \(results.count) of \(index) ended")
            await e2e.settle()

            let counts = e2e.server.counts
            #expect(counts.arrivedDuringUnique == 0, "\(counts.arrivedDuringUnique) requests arrived during a unique one")
            #expect(counts.othersInFlightWhenUniqueArrived == [0, 0], "a unique request started beside others")
            // The second unique request was queued behind work that had started before it.
            let tags = counts.arrivals(of: "items").compactMap(\.tag)
            #expect((tags.firstIndex(of: "unique-4") ?? .max) < (tags.firstIndex(of: "high-5") ?? .max), "\(tags)")
            #expect((tags.firstIndex(of: "unique-13") ?? .max) < (tags.firstIndex(of: "default-14") ?? .max), "\(tags)")
            #expect(results.values.values.allSatisfy { $0.error == nil })
        }
    }
}
