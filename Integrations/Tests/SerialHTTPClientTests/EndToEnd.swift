import AsyncHTTPClient
import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import Testing

typealias HTTPQueue = RequestQueue<HTTPClientTransport>

/// One end-to-end setup: a loopback server, an AsyncHTTPClient transport that owns its client,
/// a scheduler and a queue whose refresh calls the server's `POST /token`.
struct EndToEnd: Sendable {
    let server: LoopbackServer
    let transport: HTTPClientTransport
    let scheduler: SerialQueue
    let queue: HTTPQueue

    /// Runs `body` against a fresh setup, then tears it down in order — queue, client,
    /// scheduler, server — whether `body` returned or threw; each step bounded in time.
    static func run(
        behaviour: ServerBehaviour = ServerBehaviour(),
        configuration: HTTPQueue.Configuration,
        client: HTTPClient.Configuration = EndToEnd.clientConfiguration(),
        attemptTimeout: Duration? = nil,
        seed: UInt64 = 1,
        _ body: (EndToEnd) async throws -> Void
    ) async throws {
        let server = try await LoopbackServer.start(behaviour: behaviour, seed: seed)
        let transport = HTTPClientTransport(configuration: client, defaultAttemptTimeout: attemptTimeout)
        let scheduler = SerialQueue(label: "e2e")
        let tokenURL = server.url("/token")
        let policy = HTTPQueue.Policy(
            classify: HTTPClientTransport.classify,
            refresh: { _, completion in transport.fetchToken(HTTPRequest(.POST, url: tokenURL), completion: completion) })
        let queue = HTTPQueue(
            transport: transport, credential: BearerToken(server.currentToken), policy: policy,
            configuration: configuration, scheduler: scheduler)
        let setup = EndToEnd(server: server, transport: transport, scheduler: scheduler, queue: queue)
        var failure: (any Error)? = nil
        do { try await body(setup) } catch { failure = error }
        // Queue, then client, then scheduler: answers still in flight when the queue shuts down
        // (ignored by it) arrive through the scheduler, so it must outlive the client.
        queue.shutdown()
        try? await transport.shutdown()
        await scheduler.run {}  // completions of what shutdown ended have run
        scheduler.shutdown()
        let stopped = await server.stop()
        #expect(stopped, "the loopback server did not stop within 10 s")
        if let failure { throw failure }
    }

    /// A pool wide enough for the tests' concurrency; redirects are not followed unless asked.
    static func clientConfiguration(redirects: HTTPClient.Configuration.RedirectConfiguration = .disallow)
        -> HTTPClient.Configuration
    {
        var configuration = HTTPClient.Configuration(redirectConfiguration: redirects)
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 128)
        return configuration
    }

    /// `GET /items/<id>` with `X-Tag: <tag>`, answering after `delayMilliseconds`.
    func item(_ id: Int, tag: String? = nil, unique: Bool = false, delayMilliseconds: Int = 0) -> HTTPRequest {
        var request = HTTPRequest(url: self.server.url("/items/\(id)?delay_ms=\(delayMilliseconds)"))
        if let tag { request.headers.add(name: "X-Tag", value: tag) }
        if unique { request.headers.add(name: "X-Unique", value: "1") }
        return request
    }

    /// Waits until every completion the scheduler has queued has run (a barrier), bounded.
    func settle() async {
        await self.scheduler.run {}
    }
}
