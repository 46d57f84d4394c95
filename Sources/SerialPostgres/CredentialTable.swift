#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
import Logging
import PostgresNIO
import SerialRuntime

/// The SQL of a `PostgresCredentialCoordinator`: one row per credential, every step a single
/// statement (so a single transaction) that checks the generation, and the lease's fence where
/// it matters.
struct CredentialTable: Sendable {
    /// One credential's row as read.
    struct Row: Sendable {
        var credential: String
        var generation: UInt64
        /// How long the live lease has left; `nil` when none is live.
        var leaseRemaining: Duration?
    }

    typealias Statement<T> = @Sendable (PostgresConnection) async throws -> T

    let name: String
    let credential: String
    let logger: Logger
    /// The NOTIFY channel: the table's name.
    var channel: String { self.name }

    init(name: String, credential: String, logger: Logger) throws(PostgresCoordinatorError) {
        let identifier = name.utf8.count <= 63 && name.first.map { $0 == "_" || $0.isLetter && $0.isASCII } == true
            && name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
        guard identifier else { throw .invalidTableName(name) }
        self.name = name.lowercased()
        self.credential = credential
        self.logger = logger
    }

    /// Creates the table unless it exists. Looked up first: `CREATE TABLE IF NOT EXISTS` asks for
    /// the schema's CREATE privilege even when the table is there, and a coordinator's role needs
    /// none once its owner has made it (see the article's "Privileges").
    var create: Statement<Void> {
        let (table, logger) = (self.name, self.logger)
        return { connection in
            let found = try await connection.query("SELECT to_regclass(\(table)) IS NOT NULL", logger: logger)
            for try await exists in found.decode(Bool.self) where exists { return }
            let sql: PostgresQuery = """
                CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                    name text PRIMARY KEY,
                    credential text NOT NULL,
                    generation bigint NOT NULL,
                    lease_fence bigint NOT NULL DEFAULT 0,
                    lease_holder text,
                    lease_expires_at timestamptz,
                    published_at timestamptz NOT NULL DEFAULT clock_timestamp())
                """
            do {
                try await connection.query(sql, logger: logger)
            } catch let error as PSQLError where error.code == .server {
                // Two replicas creating the table at once: one loses the race on the catalog; the
                // table exists now, which a second attempt confirms.
                try await connection.query(sql, logger: logger)
            }
        }
    }

    func insertInitial(_ text: String) -> Statement<Void> {
        let (table, name, logger) = (self.name, self.credential, self.logger)
        return { connection in
            try await connection.query(
                """
                INSERT INTO \(unescaped: table) (name, credential, generation) VALUES (\(name), \(text), 0)
                ON CONFLICT (name) DO NOTHING
                """, logger: logger)
        }
    }

    var read: Statement<Row?> {
        let (table, name, logger) = (self.name, self.credential, self.logger)
        return { connection in
            let rows = try await connection.query(
                """
                SELECT credential, generation,
                    (EXTRACT(EPOCH FROM (lease_expires_at - clock_timestamp())) * 1000)::float8
                FROM \(unescaped: table) WHERE name = \(name)
                """, logger: logger)
            for try await (credential, generation, remaining) in rows.decode((String, Int64, Double?).self) {
                let live = remaining.flatMap { $0 > 0 ? Duration.milliseconds($0) : nil }
                return Row(credential: credential, generation: UInt64(generation), leaseRemaining: live)
            }
            return nil
        }
    }

    /// Takes the lease on `generation` if it is the stored one and no lease is live; its fence.
    func take(_ generation: UInt64, _ holder: String, _ duration: Duration) -> Statement<UInt64?> {
        let (table, name, logger) = (self.name, self.credential, self.logger)
        let milliseconds = Double(duration.components.seconds) * 1000
            + Double(duration.components.attoseconds) / 1e15
        return { connection in
            let rows = try await connection.query(
                """
                UPDATE \(unescaped: table)
                SET lease_fence = lease_fence + 1, lease_holder = \(holder),
                    lease_expires_at = clock_timestamp() + \(milliseconds) * interval '1 millisecond'
                WHERE name = \(name) AND generation = \(Int64(generation))
                    AND (lease_expires_at IS NULL OR lease_expires_at <= clock_timestamp())
                RETURNING lease_fence
                """, logger: logger)
            for try await fence in rows.decode(Int64.self) { return UInt64(fence) }
            return nil
        }
    }

    /// Stores `text` as the next generation if the row still has the lease's generation and
    /// fence, frees the lease and notifies, all in one statement; the new generation, or `nil`.
    func publish(_ text: String, _ lease: CredentialLease) -> Statement<UInt64?> {
        let (table, name, channel, logger) = (self.name, self.credential, self.channel, self.logger)
        return { connection in
            let rows = try await connection.query(
                """
                WITH published AS (
                    UPDATE \(unescaped: table)
                    SET credential = \(text), generation = generation + 1, lease_holder = NULL,
                        lease_expires_at = NULL, published_at = clock_timestamp()
                    WHERE name = \(name) AND generation = \(Int64(lease.generation))
                        AND lease_fence = \(Int64(lease.fence))
                    RETURNING generation)
                SELECT generation, pg_notify(\(channel), \(name))::text FROM published
                """, logger: logger)
            for try await (generation, _) in rows.decode((Int64, String).self) { return UInt64(generation) }
            return nil
        }
    }

    /// Frees the lease if it is still `lease`, and notifies the waiters.
    func release(_ lease: CredentialLease) -> Statement<Bool> {
        let (table, name, channel, logger) = (self.name, self.credential, self.channel, self.logger)
        return { connection in
            let rows = try await connection.query(
                """
                WITH released AS (
                    UPDATE \(unescaped: table) SET lease_holder = NULL, lease_expires_at = NULL
                    WHERE name = \(name) AND generation = \(Int64(lease.generation))
                        AND lease_fence = \(Int64(lease.fence))
                    RETURNING generation)
                SELECT pg_notify(\(channel), \(name))::text FROM released
                """, logger: logger)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }
}
#endif  // Postgres
