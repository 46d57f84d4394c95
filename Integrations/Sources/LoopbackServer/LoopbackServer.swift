import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A Hummingbird HTTP server on 127.0.0.1 with an ephemeral port, for tests, the demo and the
/// benchmark. Its handlers keep their own counts (`counts`), so tests can assert what the server
/// saw, not only what the client got.
///
/// Routes:
/// - `POST /token`: a refresh; issues the next token `t1`, `t2`, … (or 500, see `ServerBehaviour`);
///   with `ServerBehaviour.tokenLifetime`, answers `<token> <milliseconds it lasts>`.
/// - `GET /items/:id`: 200 with body `<id> <token>` when the bearer token is current and unexpired,
///   else 401. `?delay_ms=N` answers after N ms. `X-Unique: 1` marks a unique request.
/// - `GET /fault/:id`: 200, 500, a slow answer or a dropped connection, drawn from a seeded
///   generator with `ServerBehaviour.faultPercentages`. No token needed.
/// - `GET /loop/a`, `GET /loop/b`: 302 to each other (a redirect loop).
/// - `GET /bench`: 200 `ok` when the token is current (not logged in `arrivals`), 401 (counted in
///   `rejected`) otherwise.
/// - `POST /expire`: the current token stops being accepted.
/// - `POST /oauth/token` with `X-Refresh-Token: r<g>`: rotating tokens with reuse detection; the
///   current refresh token gets `a<g+1> r<g+1>`, a used one revokes the family (400 from then on
///   for every refresh, 401 for every `GET /api/:id`), anything else 400.
/// - `GET /api/:id`: 200 with body `<id>` when the bearer is the current access token, within
///   its uses (`ServerBehaviour.accessTokenUses`), and the family is not revoked; else 401.
///
/// Traffic stays on loopback: it listens on 127.0.0.1 only.
public final class LoopbackServer: Sendable {
    /// The port it listens on.
    public let port: Int
    private let task: Task<Void, any Error>
    private let group: ServiceGroup
    private let state: SharedServerState

    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(self.port)" }

    /// The URL of `path` (which starts with `/`) on this server.
    public func url(_ path: String) -> String { self.baseURL + path }

    /// Starts a server behaving as `behaviour`, the current token being `initialToken`; returns
    /// once it listens. The fault generator starts from `seed`.
    ///
    /// - Throws: `LoopbackServerError.notStarted` if it does not listen within `startTimeout`.
    public static func start(
        behaviour: ServerBehaviour = ServerBehaviour(),
        initialToken: String = "t0",
        seed: UInt64 = 1,
        startTimeout: Duration = .seconds(20)
    ) async throws -> LoopbackServer {
        let state = SharedServerState(ServerState(behaviour: behaviour, token: initialToken, seed: seed))
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "loopback-server")
        logger.logLevel = .critical
        let app = Application(
            router: Self.router(state),
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                portSink.yield(channel.localAddress?.port ?? -1)
                portSink.finish()
            },
            logger: logger)
        // In a service group of its own, so that `stop()` can shut it down gracefully: cancelling
        // `app.run()` drops connections accepted but not yet served, and NIO traps on those
        // ("Deinited NIOAsyncWriter without calling finish()").
        let group = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger))
        let task = Task { try await group.run() }
        let port = await firstValue(of: ports, within: startTimeout)
        guard let port, port > 0 else {
            task.cancel()
            throw LoopbackServerError.notStarted(after: startTimeout)
        }
        return LoopbackServer(port: port, task: task, group: group, state: state)
    }

    private init(port: Int, task: Task<Void, any Error>, group: ServiceGroup, state: SharedServerState) {
        self.port = port
        self.task = task
        self.group = group
        self.state = state
    }

    /// Stops the server gracefully (it stops accepting, handlers still waiting end, connections
    /// close) and waits for it to end, at most `timeout`; past half of it, the server's task is
    /// cancelled. Returns whether it ended in time.
    @discardableResult
    public func stop(timeout: Duration = .seconds(10)) async -> Bool {
        self.state.withLock { $0.stopping = true }
        await self.group.triggerGracefulShutdown()
        let task = self.task
        let cancelling = Task {
            try await Task.sleep(for: timeout / 2)
            task.cancel()
        }
        defer { cancelling.cancel() }
        let (ends, sink) = AsyncStream.makeStream(of: Bool.self)
        Task {
            _ = try? await task.value
            sink.yield(true)
            sink.finish()
        }
        return await firstValue(of: ends, within: timeout) ?? false
    }

    /// What the handlers saw so far.
    public var counts: ServerCounts { self.state.withLock { $0.counts } }

    /// The token the server accepts now.
    public var currentToken: String { self.state.withLock { $0.token } }

    /// With `ServerBehaviour.tokenLifetime`: how many tokens' lifetimes ran out within `window`.
    public func tokenExpiries(within window: ClosedRange<ContinuousClock.Instant>) -> Int {
        self.state.withLock { $0.expiries(within: window) }
    }

    /// Changes how the server behaves from now on.
    public func configure(_ change: (inout ServerBehaviour) -> Void) {
        self.state.withLock { change(&$0.behaviour) }
    }

    /// The current token stops being accepted (as `POST /expire` does).
    public func expireToken() {
        self.state.withLock { $0.tokenExpired = true }
    }
}

/// Why a `LoopbackServer` could not be used.
public enum LoopbackServerError: Error, CustomStringConvertible {
    /// It did not report a listening port within this time.
    case notStarted(after: Duration)

    public var description: String {
        switch self {
        case .notStarted(let after): return "the loopback server did not listen on 127.0.0.1 within \(after)"
        }
    }
}

/// The first element of `stream`, or `nil` if none comes within `timeout` (a bounded wait for
/// tests and tools).
public func firstValue<T: Sendable>(of stream: AsyncStream<T>, within timeout: Duration) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await stream.first { _ in true } }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
