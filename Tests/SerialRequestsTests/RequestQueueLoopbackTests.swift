import SerialCore
import SerialRequests
import SerialTestSupport
import Testing

@Suite("RequestQueue end to end against an HTTP server on loopback")
struct RequestQueueLoopbackTests {
    @Test(arguments: QueueMode.allCases) func aTokenExpiringMidBurstIsRefreshedOnceAndEveryRequestSucceeds(mode: QueueMode) throws {
        let server = try #require(LoopbackHTTPServer(), "could not listen on 127.0.0.1")
        defer { server.stop() }
        let transport = LoopbackHTTPTransport(port: server.port)
        let scheduler = mode.queue(label: "http-sched")
        let policy = RequestQueue<LoopbackHTTPTransport>.Policy(
            classify: { _, outcome in
                switch outcome {
                case .failure(let error): return .retry(error)
                case .success(let reply) where reply.status == 401: return .credentialExpired
                case .success(let reply) where reply.status == 200: return .success
                case .success(let reply):
                    return .failure(LoopbackHTTPTransport.ConnectionFailed(step: "status \(reply.status)"))
                }
            },
            refresh: { _, completion in transport.fetchToken(completion) })
        let queue = RequestQueue(
            transport: transport, credential: "t0", policy: policy,
            configuration: .init(
                maximumConcurrent: 4,
                retryBackoff: RetryBackoff(initial: .milliseconds(5), maximum: .milliseconds(50))),
            scheduler: scheduler)
        let total = 40
        let results = LockedValue<[Int: RequestResult<LoopbackHTTPTransport.HTTPReply>]>([:])
        let halfDone = TestSemaphore()
        let allDone = TestSemaphore()
        func submit(_ index: Int) {
            let priorities: [RequestPriority] = [.low, .default, .high]
            queue.submit("/item/\(index)", priority: priorities[index % 3]) { result in
                let count = results.withLock { results in
                    results[index] = result
                    return results.count
                }
                if count == total / 2 { halfDone.signal() }
                if count == total { allDone.signal() }
            }
        }
        for index in 0..<(total / 2) { submit(index) }
        #expect(halfDone.wait(timeout: .seconds(30)), "the first half did not complete within 30 s")
        _ = transport.get("/expire", bearer: nil)
        for index in (total / 2)..<total { submit(index) }
        #expect(allDone.wait(timeout: .seconds(30)), "only \(results.withLock { $0.count }) of \(total) within 30 s")

        let failures = results.withLock { $0.filter { !$0.value.isSuccess }.map { "\($0.key): \($0.value)" } }
        #expect(failures.isEmpty, "\(failures)")
        let bodies = results.withLock { results in (0..<total).map { (try? results[$0]?.get())?.body } }
        #expect(bodies == (0..<total).map { "ok /item/\($0)" })
        #expect(queue.statistics.refreshesStarted == 1)
        #expect(server.tokensIssued == 1)
        #expect(queue.credentialGeneration == 1)

        queue.shutdown()
        for worker in transport.workers { worker.shutdown() }
        scheduler.sync {}
        scheduler.shutdown()
    }
}
