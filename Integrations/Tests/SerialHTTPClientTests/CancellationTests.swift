import AsyncHTTPClient
import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import Testing

/// When the queue ends a request early, its HTTP request is cancelled, not left waiting.
@Suite("Cancelling the HTTP request when the queue ends a request", .serialized)
struct CancellationTests {
    /// Every `/fault` answer takes 60 s (its sleep ends when the server stops): longer than any
    /// wait below, so that a request that ended did so because it was cancelled, not answered.
    static func slowServer() -> ServerBehaviour {
        var behaviour = ServerBehaviour()
        behaviour.faultPercentages = (serverError: 0, slow: 100, drop: 0)
        behaviour.slowDelay = .seconds(60)
        return behaviour
    }

    enum Ending: String, CaseIterable, Sendable {
        case cancel, timeout, shutdown, taskCancellation
    }

    @Test("cancel, timeout, shutdown and task cancellation each end the HTTP request in flight at once",
          arguments: Ending.allCases)
    func endingARequestCancelsItsHTTPRequest(ending: Ending) async throws {
        let configuration = HTTPQueue.Configuration(maximumConcurrent: 2, maximumRetries: 0, agingInterval: nil)
        try await EndToEnd.run(behaviour: Self.slowServer(), configuration: configuration) { e2e in
            let request = HTTPRequest(url: e2e.server.url("/fault/1"))
            let results = Completions<RequestResult<HTTPResponse>>()
            let timeout: Duration = ending == .timeout ? .milliseconds(300) : .seconds(20)
            var handle: RequestHandle? = nil
            var task: Task<Void, Never>? = nil
            if ending == .taskCancellation {
                let queue = e2e.queue
                task = Task { results.record(0, await queue.response(for: request, timeout: timeout)) }
            } else {
                handle = e2e.queue.submit(request, timeout: timeout) { results.record(0, $0) }
            }
            let server = e2e.server
            // A 300 ms timeout may pass before the request reaches the server on a loaded machine:
            // then it ends a request that was not yet in flight, and only the checks after the
            // ending hold. The other endings come when the test makes them, with the request in flight.
            if ending != .timeout {
                #expect(await eventually(within: .seconds(30)) { server.counts.arrivals(of: "fault").count == 1 },
                        "the request did not reach the server")
                #expect(e2e.transport.requestsInFlight == 1)
            }
            switch ending {
            case .cancel: #expect(handle!.cancel())
            case .timeout: break
            case .shutdown: #expect(e2e.queue.shutdown() == 1)
            case .taskCancellation: task!.cancel()
            }
            #expect(await results.wait(for: 1, timeout: .seconds(30)), "the request did not end")
            let transport = e2e.transport
            #expect(await eventually(within: .seconds(30)) { transport.requestsInFlight == 0 },
                    "the HTTP request was still in flight 30 s after the request ended (the server answers after 60 s)")
            let expected: String = switch ending {
            case .cancel, .taskCancellation: "request cancelled"
            case .timeout: "request timed out after 0.3 seconds"
            case .shutdown: "request queue shut down"
            }
            #expect(results.values[0]?.error?.description == expected)
            #expect(request.cancellation.isCancelled)
        }
    }

    @Test("an attempt timeout cancels the HTTP request and the attempt is retried")
    func anAttemptTimeoutIsRetried() async throws {
        let configuration = HTTPQueue.Configuration(
            maximumConcurrent: 2, maximumRetries: 2,
            retryBackoff: RetryBackoff(initial: .milliseconds(5), maximum: .milliseconds(5)), agingInterval: nil)
        try await EndToEnd.run(behaviour: Self.slowServer(), configuration: configuration) { e2e in
            let request = HTTPRequest(url: e2e.server.url("/fault/1"), attemptTimeout: .milliseconds(200))
            let result = await e2e.queue.response(for: request, timeout: .seconds(10))
            guard case .failure(.retriesExhausted(attempts: 3, let last)) = result else {
                Issue.record("\(result); expected three timed-out attempts")
                return
            }
            #expect(last as? HTTPClientError == .deadlineExceeded, "\(last)")
            // On a loaded machine an attempt may time out before it reaches the server.
            let arrivals = e2e.server.counts.arrivals(of: "fault").count
            #expect(arrivals <= 3, "the server saw \(arrivals) attempts (at most 1 + maximumRetries)")
            let transport = e2e.transport
            #expect(await eventually(within: .seconds(30)) { transport.requestsInFlight == 0 })
        }
    }
}

@Suite("The client's lifecycle")
struct LifecycleTests {
    @Test("withTransport shuts its client down when the body returns")
    func withTransportShutsTheClientDown() async throws {
        let server = try await LoopbackServer.start()
        let transport = try await HTTPClientTransport.withTransport { transport in
            let response = try await withCheckedThrowingContinuation { continuation in
                transport.send(HTTPRequest(url: server.url("/bench")), bearer: "t0") { continuation.resume(with: $0) }
            }
            #expect(response.status == .ok)
            return transport
        }
        let after = await withCheckedContinuation { continuation in
            transport.send(HTTPRequest(url: server.url("/bench")), bearer: "t0") { continuation.resume(returning: $0) }
        }
        guard case .failure(let error) = after else {
            Issue.record("the client still answered after withTransport returned: \(after)")
            return
        }
        #expect(error as? HTTPClientError == .alreadyShutdown, "\(error)")
        #expect(await server.stop())
    }

    @Test("a borrowed client is left to its owner: shutdown() does not touch it")
    func aBorrowedClientIsNotShutDown() async throws {
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let transport = HTTPClientTransport(client: client)
        try await transport.shutdown()
        try await client.shutdown()  // would throw alreadyShutdown had the transport shut it down
    }

    @Test("an owned client whose transport is dropped without shutdown() is shut down, not leaked")
    func aForgottenOwnedClientIsShutDown() async {
        // AsyncHTTPClient traps in debug builds when a client is released while running.
        await #expect(processExitsWith: .success) {
            let server = try await LoopbackServer.start()
            do {
                let transport = HTTPClientTransport()
                _ = try await withCheckedThrowingContinuation { continuation in
                    transport.send(HTTPRequest(url: server.url("/bench")), bearer: "t0") { continuation.resume(with: $0) }
                }
            }
            try await Task.sleep(for: .milliseconds(300))  // the shutdown the release started completes
            await server.stop()
        }
    }
}
