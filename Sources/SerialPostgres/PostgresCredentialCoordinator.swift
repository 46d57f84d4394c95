#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
import Logging
import PostgresNIO
import SerialRuntime

/// A `CredentialCoordinator` on PostgreSQL: replicas of one client, in any number of processes,
/// refresh their shared credential once per generation.
///
/// ```swift
/// let coordinator = try await PostgresCredentialCoordinator<String>.connect(
///     .init(host: "127.0.0.1", port: 5432, username: "app", database: "app", name: "billing-api"),
///     initial: "t0", codec: .string)
/// let (token, generation) = try await coordinator.current()
/// let queue = RequestQueue(
///     transport: api, credential: token, credentialGeneration: generation, policy: policy,
///     coordinator: coordinator, scheduler: SerialQueue(label: "api"))
/// ```
///
/// **The table.** One row per credential name in `Configuration.table`: the credential (text,
/// through the codec), its generation, and the lease (a fencing number, the holder's name, and
/// the instant it expires, on the database's clock, so replicas' clocks do not matter). Each step
/// is one SQL statement, hence one transaction, whose `WHERE` clause checks the generation:
/// - `acquire` takes the lease only if the row still has the generation asked for and no live
///   lease (`UPDATE … WHERE generation = $g AND lease expired or free`, adding 1 to the fence);
///   otherwise it reads the row: a newer generation is answered at once, a live lease is waited
///   behind (see below);
/// - `publish` writes the credential only if the row still has the lease's generation *and*
///   fence (no lease was granted since: a holder whose lease expired and was taken over is
///   refused, so it can never overwrite a newer credential), adds 1 to the generation, frees the
///   lease, and sends a NOTIFY in the same statement;
/// - `release` frees the lease if it is still the caller's, and NOTIFYs.
/// Under PostgreSQL's default isolation (read committed) two such UPDATEs of one row run one
/// after the other, and the second re-checks its `WHERE` clause against the first's result.
///
/// **Waiting.** A caller behind a live lease re-reads the row when a NOTIFY arrives on the
/// coordinator's LISTEN connection, and otherwise after a backoff (`waitBackoff`, doubling, never
/// past the lease's expiry): a publish is seen within a round trip of the NOTIFY, and a holder
/// that died is taken over within `leaseDuration` plus one backoff step. Nothing waits longer
/// than that without re-reading; the queue's `refreshTimeout` bounds the whole wait.
///
/// **Faults.** `connect` throws `PostgresCoordinatorError.unreachable` when the database cannot
/// be reached within `connectTimeout` (no hang). Later, each statement is bounded by
/// `operationTimeout`; a failure ends the call with a `PostgresCoordinatorError` (the queue's
/// parked requests then fail once with `RequestError.refreshFailed`), and the next call connects
/// again. Requests that need no refresh never touch the database.
public final class PostgresCredentialCoordinator<Credential: Sendable>: CredentialCoordinator {
    /// Where the database is, which credential, and the timings.
    public struct Configuration: Sendable {
        /// The server's host (use a loopback or private address you control).
        public var host: String
        /// The server's port.
        public var port: Int
        /// The role to connect as.
        public var username: String
        /// Its password (`nil`: trust or peer authentication).
        public var password: String?
        /// The database.
        public var database: String
        /// The table of credentials; created if missing. A plain SQL identifier.
        public var table: String
        /// The credential's name: its row in `table`. Replicas sharing a credential use the same name.
        public var name: String
        /// This replica's name, written as the lease holder (for people reading the table).
        public var holder: String
        /// How long a lease lasts if its holder neither publishes nor releases it (a crashed or
        /// stopped process): the longest a fleet waits for a dead holder. Longer than a refresh takes.
        public var leaseDuration: Duration
        /// How long `connect` may take to reach the database.
        public var connectTimeout: Duration
        /// How long one statement may take (connecting again included) before the call fails.
        public var operationTimeout: Duration
        /// The first and the longest wait between two reads of a row leased by someone else.
        public var waitBackoff: (initial: Duration, maximum: Duration)
        /// How connections are protected: by default TLS required and verified against the
        /// system's trust roots for any host outside loopback, unencrypted on loopback (`PostgresTLS`).
        public var tls: PostgresTLS

        /// A configuration with usable timings: leases of 10 s, 2 s to connect and per statement,
        /// waits of 10 ms doubling up to 200 ms (NOTIFY usually ends them sooner).
        public init(
            host: String, port: Int = 5432, username: String, password: String? = nil, database: String,
            table: String = "serial_credentials", name: String, holder: String = "replica",
            leaseDuration: Duration = .seconds(10), connectTimeout: Duration = .seconds(2),
            operationTimeout: Duration = .seconds(2),
            waitBackoff: (initial: Duration, maximum: Duration) = (.milliseconds(10), .milliseconds(200)),
            tls: PostgresTLS = .automatic
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.table = table
            self.name = name
            self.holder = holder
            self.leaseDuration = leaseDuration
            self.connectTimeout = connectTimeout
            self.operationTimeout = operationTimeout
            self.waitBackoff = waitBackoff
            self.tls = tls
        }

        var endpoint: String { "\(self.host):\(self.port)/\(self.database)" }
    }

    /// How a credential is stored: as text, sealed if made with `sealed(with:)`.
    public struct Codec: Sendable {
        /// The credential as text.
        public var encode: @Sendable (Credential) -> String
        /// The credential from its text; throws when the text is not one.
        public var decode: @Sendable (String) throws -> Credential
        /// The encryption of the text before it is stored (`sealed(with:)`); `nil`: stored as is.
        var sealing: CredentialSealing? = nil

        /// A codec from its two directions.
        public init(
            encode: @escaping @Sendable (Credential) -> String,
            decode: @escaping @Sendable (String) throws -> Credential
        ) {
            self.encode = encode
            self.decode = decode
        }
    }

    /// What this coordinator was connected with.
    public let configuration: Configuration
    let codec: Codec
    let table: CredentialTable
    let session: PostgresSession
    let listener: PublishListener

    private init(configuration: Configuration, codec: Codec, table: CredentialTable, session: PostgresSession,
                 listener: PublishListener) {
        self.configuration = configuration
        self.codec = codec
        self.table = table
        self.session = session
        self.listener = listener
    }

    /// Connects, creates the table if missing, stores `initial` as generation 0 of
    /// `configuration.name` unless a row exists already, and starts listening for publishes.
    ///
    /// - Throws: `PostgresCoordinatorError.unreachable` within `connectTimeout` when the database
    ///   cannot be reached; `.tls` when TLS cannot be agreed (see `PostgresTLS`);
    ///   `.invalidTableName`, `.statementFailed` for bad input.
    public static func connect(
        _ configuration: Configuration, initial: Credential, codec: Codec,
        logger: Logger = Logger(label: "serial-postgres")
    ) async throws(PostgresCoordinatorError) -> PostgresCredentialCoordinator {
        let table = try CredentialTable(name: configuration.table, credential: configuration.name, logger: logger)
        let (tls, serverName) = try configuration.tls.connectionTLS(
            for: configuration.host, endpoint: configuration.endpoint)
        var connection = PostgresConnection.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: tls)
        connection.options.tlsServerName = serverName
        connection.options.connectTimeout = .nanoseconds(configuration.connectTimeout.nanosecondsClamped)
        let session = PostgresSession(
            configuration: connection, endpoint: configuration.endpoint, timeout: configuration.connectTimeout,
            logger: logger)
        do throws(PostgresCoordinatorError) {
            try await session.run("create table", table.create)
            let stored = try codec.stored(initial, in: table.row(generation: 0))
            try await session.run("insert the initial credential", table.insertInitial(stored))
        } catch {
            await session.close()  // a connection dropped open traps in postgres-nio's debug builds
            throw error
        }
        let working = PostgresSession(
            configuration: connection, endpoint: configuration.endpoint, timeout: configuration.operationTimeout,
            logger: logger)
        await session.close()
        let listener = PublishListener(
            configuration: connection, channel: table.channel, retryAfter: configuration.waitBackoff.maximum,
            logger: logger)
        await listener.start()
        return PostgresCredentialCoordinator(
            configuration: configuration, codec: codec, table: table, session: working, listener: listener)
    }

    /// Stops listening and closes the connections. Call it before letting the coordinator go: its
    /// LISTEN connection stays open until then. Calls made afterwards connect again.
    public func close() async {
        await self.listener.stop()
        await self.session.close()
    }

    /// The stored credential and its generation: what a replica starts its queue with.
    public func current() async throws(PostgresCoordinatorError) -> (credential: Credential, generation: UInt64) {
        let row = try await self.read()
        return (try self.decode(row), row.generation)
    }

    // MARK: CredentialCoordinator

    /// Takes the lease on `generation`, or answers the newer credential, or waits behind a live
    /// lease (see the type's summary). Answers on a task of its own.
    public func acquire(
        replacing generation: UInt64,
        completion: @escaping @Sendable (Result<CredentialGrant<Credential>, any Error>) -> Void
    ) {
        Task {
            do {
                completion(.success(try await self.acquire(replacing: generation)))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// Publishes `credential` as generation `lease.generation + 1` if the row still has the
    /// lease's generation and fence; `.refused` otherwise. Answers on a task of its own.
    public func publish(
        _ credential: Credential, under lease: CredentialLease,
        completion: @escaping @Sendable (Result<PublishOutcome, any Error>) -> Void
    ) {
        Task {
            do throws(PostgresCoordinatorError) {
                let text = try self.codec.stored(credential, in: self.table.row(generation: lease.generation + 1))
                let published = try await self.session.run("publish", self.table.publish(text, lease))
                completion(.success(published.map { .accepted(generation: $0) } ?? .refused))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// Frees `lease` if it is still the one in the row (in the background; a failure only means
    /// the lease expires by itself).
    public func release(_ lease: CredentialLease) {
        Task { _ = try? await self.session.run("release", self.table.release(lease)) }
    }

    /// The decision loop of `acquire`: take the lease, or answer a newer credential, or wait.
    func acquire(replacing generation: UInt64) async throws -> CredentialGrant<Credential> {
        var backoff = self.configuration.waitBackoff.initial
        let holder = self.configuration.holder
        let lease = self.configuration.leaseDuration
        while true {
            // Read before the row: a NOTIFY from here on ends the wait below (see PublishSignal).
            let seen = self.listener.signal.epoch
            if let fence = try await self.session.run("take the lease", self.table.take(generation, holder, lease)) {
                return .lease(CredentialLease(generation: generation, fence: fence))
            }
            let row = try await self.read()
            if row.generation > generation { return .published(try self.decode(row), generation: row.generation) }
            if row.generation < generation {
                throw CredentialCoordinatorError.generationAhead(asked: generation, current: row.generation)
            }
            // Leased by someone else: wait for a NOTIFY, the backoff, or the lease's end.
            let remaining = row.leaseRemaining ?? .zero
            _ = await self.listener.signal.wait(since: seen, upTo: max(.milliseconds(1), min(backoff, remaining)))
            backoff = min(backoff * 2, self.configuration.waitBackoff.maximum)
        }
    }

    private func read() async throws(PostgresCoordinatorError) -> CredentialTable.Row {
        guard let row = try await self.session.run("read", self.table.read) else {
            throw .missingCredential(name: self.configuration.name)
        }
        return row
    }

    /// The row's credential through the codec (opened first if sealed; refused if not authentic).
    private func decode(_ row: CredentialTable.Row) throws(PostgresCoordinatorError) -> Credential {
        try self.codec.credential(from: row.credential, in: self.table.row(generation: row.generation))
    }
}

extension PostgresCredentialCoordinator.Codec where Credential == String {
    /// The credential is its own text.
    public static var string: Self { Self(encode: { $0 }, decode: { $0 }) }
}

extension Duration {
    /// Whole nanoseconds, saturating at `Int64.max`.
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = self.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).overflow ? .max
            : product + attoseconds / 1_000_000_000
    }
}
#endif  // Postgres
