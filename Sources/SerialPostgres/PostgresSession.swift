#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
import Logging
import NIOCore
import PostgresNIO

/// One connection to PostgreSQL, opened on first use and again after it is lost, with every
/// statement bounded in time. Statements are single SQL statements (each its own transaction),
/// so concurrent callers may share the connection: PostgreSQL runs them one after the other.
actor PostgresSession {
    let configuration: PostgresConnection.Configuration
    let endpoint: String
    let timeout: Duration
    let logger: Logger
    private var connection: PostgresConnection? = nil
    private var connecting: Task<PostgresConnection, any Error>? = nil
    private var nextID = 1
    /// How many times `close` was called: a connection that an `open` gets after a `close` began
    /// is closed at once instead of kept (the session may be on its way out: it would leak).
    private var closes = 0

    init(configuration: PostgresConnection.Configuration, endpoint: String, timeout: Duration, logger: Logger) {
        self.configuration = configuration
        self.endpoint = endpoint
        self.timeout = timeout
        self.logger = logger
    }

    /// Runs `body` on the connection (opened if needed) within `timeout`. A failure of the
    /// connection drops it, so that the next call opens a new one.
    func run<T: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(PostgresCoordinatorError) -> T {
        let connection = try await self.open()
        do {
            return try await withTimeout(self.timeout) { try await body(connection) }
        } catch let error as PSQLError where error.code == .server {
            throw .statementFailed(operation: operation, reason: error.serverInfo?[.message] ?? "\(error)")
        } catch is TimeoutReached {
            self.drop(connection)
            throw .timedOut(endpoint: self.endpoint, operation: operation, after: self.timeout)
        } catch let error as PostgresCoordinatorError {
            throw error
        } catch {
            self.drop(connection)
            throw .unreachable(endpoint: self.endpoint, reason: "\(operation): \(Self.reason(error))")
        }
    }

    /// Closes the connection; a later `run` opens a new one.
    func close() async {
        self.closes += 1
        self.connecting?.cancel()
        self.connecting = nil
        if let connection = self.connection {
            self.connection = nil
            try? await connection.close()
        }
    }

    private func open() async throws(PostgresCoordinatorError) -> PostgresConnection {
        if let connection = self.connection, !connection.isClosed { return connection }
        if let connecting = self.connecting { return try await self.await(connecting) }
        let id = self.nextID
        self.nextID += 1
        let (configuration, logger, timeout) = (self.configuration, self.logger, self.timeout)
        let connecting = Task {
            try await withTimeout(timeout) {
                try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
            } late: { connection in
                try? await connection.close()  // connected after the timeout: nobody will use it
            }
        }
        self.connecting = connecting
        defer { self.connecting = nil }
        let closes = self.closes
        let connection = try await self.await(connecting)
        guard closes == self.closes else {
            try? await connection.close()
            throw .unreachable(endpoint: self.endpoint, reason: "the session was closed while it connected")
        }
        self.connection = connection
        return connection
    }

    private func await(_ connecting: Task<PostgresConnection, any Error>) async throws(PostgresCoordinatorError)
        -> PostgresConnection
    {
        do {
            return try await connecting.value
        } catch is TimeoutReached {
            throw .unreachable(endpoint: self.endpoint, reason: "no connection within \(self.timeout)")
        } catch {
            throw .connectionFailed(endpoint: self.endpoint, encrypted: self.configuration.tls.isAllowed, error)
        }
    }

    private func drop(_ connection: PostgresConnection) {
        if self.connection === connection { self.connection = nil }
        let _: EventLoopFuture<Void> = connection.close()
    }

    /// The underlying cause in words (PSQLError's description hides it, by design).
    static func reason(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            if let message = error.serverInfo?[.message] { return "\(error.code): \(message)" }
            return "\(error.code)"
        }
        return "\(error)"
    }
}

/// A bounded wait ran out.
struct TimeoutReached: Error {}

/// `body`'s result, or `TimeoutReached` once `timeout` passes first (`body` is then cancelled).
///
/// A value `body` still returns after the timeout (cancellation is a request: a connection may
/// be established all the same) goes to `late`, so that it can be closed instead of leaked.
func withTimeout<T: Sendable>(
    _ timeout: Duration,
    _ body: @escaping @Sendable () async throws -> T,
    late: @Sendable (T) async -> Void = { _ in }
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil  // the timeout: no value
        }
        defer { group.cancelAll() }
        if let value = try await group.next()! { return value }
        group.cancelAll()
        while true {
            do {
                guard let ending = try await group.next() else { break }
                if let value = ending { await late(value) }
            } catch {
                continue  // body ended by the cancellation, as expected
            }
        }
        throw TimeoutReached()
    }
}
#endif  // Postgres
