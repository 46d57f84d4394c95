#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
/// Why a `PostgresCredentialCoordinator` could not answer. Each case names what to check.
public enum PostgresCoordinatorError: Error, CustomStringConvertible {
    /// No connection to the database within the time allowed (refused, timed out, closed): at
    /// start, `connect` throws it; mid-run, the refresh that asked fails with it (its parked
    /// requests fail once with `RequestError.refreshFailed`), and the next call connects again.
    case unreachable(endpoint: String, reason: String)
    /// A statement did not answer within `Configuration.operationTimeout`.
    case timedOut(endpoint: String, operation: String, after: Duration)
    /// The database answered with an error (permissions, a table of another shape…).
    case statementFailed(operation: String, reason: String)
    /// The credential's row is missing (deleted by someone else after `connect` created it).
    case missingCredential(name: String)
    /// The stored credential could not be decoded by the coordinator's codec.
    case undecodableCredential(name: String, reason: String)
    /// TLS could not be agreed with the server: its certificate was not verified against the
    /// configured trust roots or does not name the host, the server offers no TLS, or it refused an
    /// unencrypted connection (`PostgresTLS`). The reason says which.
    case tls(endpoint: String, reason: String)
    /// The stored credential is sealed with a key whose id is none of the coordinator's
    /// `CredentialSealing` keys (a key not yet deployed here, or retired too early), or the
    /// coordinator's codec does not seal at all (`known` is then empty). Nothing was written and
    /// no lease taken.
    case sealedWithUnknownKey(name: String, keyID: String, known: [String])
    /// The stored credential failed authentication: it was changed, copied from another row or
    /// generation, or is not sealed while the coordinator expects it to be. Nothing was written and
    /// no lease taken.
    case unsealable(name: String, reason: String)
    /// A `CredentialSealing.Key` was refused: its id or its bytes are not usable.
    case invalidSealingKey(id: String, reason: String)
    /// `Configuration.table` is not a plain SQL identifier (letters, digits, underscores; not
    /// starting with a digit; at most 63 bytes).
    case invalidTableName(String)

    /// What failed and why, naming the endpoint, the statement or the table name.
    public var description: String {
        switch self {
        case .unreachable(let endpoint, let reason):
            return "PostgreSQL at \(endpoint) unreachable: \(reason)"
        case .timedOut(let endpoint, let operation, let after):
            return "PostgreSQL at \(endpoint) did not answer \(operation) within \(after) (operationTimeout)"
        case .statementFailed(let operation, let reason):
            return "PostgreSQL refused \(operation): \(reason)"
        case .missingCredential(let name):
            return "credential \"\(name)\" has no row in the coordinator's table (was it deleted?)"
        case .undecodableCredential(let name, let reason):
            return "credential \"\(name)\" in the coordinator's table could not be decoded: \(reason)"
        case .tls(let endpoint, let reason):
            return "TLS with PostgreSQL at \(endpoint) failed: \(reason)"
        case .sealedWithUnknownKey(let name, let keyID, let known):
            let has = known.isEmpty
                ? "its codec does not seal: use codec.sealed(with:)"
                : "it has \(known.map { "\"\($0)\"" }.joined(separator: ", "))"
            return "credential \"\(name)\" is sealed with key \"\(keyID)\", which this coordinator does not have "
                + "(\(has)): deploy that key to open it"
        case .unsealable(let name, let reason):
            return "credential \"\(name)\" in the coordinator's table was refused: \(reason)"
        case .invalidSealingKey(let id, let reason):
            return "sealing key \"\(id)\" refused: \(reason)"
        case .invalidTableName(let name):
            return "\"\(name)\" is not a plain SQL identifier; use letters, digits and underscores"
        }
    }
}
#endif  // Postgres
