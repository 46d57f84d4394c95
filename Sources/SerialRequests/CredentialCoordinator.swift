import SerialCore

/// Decides who refreshes a credential shared beyond one `RequestQueue`: one caller per credential
/// generation gets a lease to refresh it; the others wait for the new credential to be published,
/// or for the lease to expire, and ask again.
///
/// A `RequestQueue` asks its coordinator once per refresh it would start. Without one it uses a
/// `LocalCredentialCoordinator` of its own, which grants every request at once: one refresh per
/// generation within the queue, as without coordination. Queues that share a coordinator share
/// the refresh: in one process a shared `LocalCredentialCoordinator`; across processes one backed
/// by a shared store (the integrations package has one on PostgreSQL).
///
/// **Generations.** Every credential has a generation: the one a queue starts with is the one
/// given to `RequestQueue.init` (0 by default), and each credential published replaces generation
/// `g` with `g + 1`. A lease fences its holder: `publish` succeeds only if no other lease was
/// granted for the same generation since, and nothing was published over it; otherwise it is
/// refused, and the caller asks again (`acquire`) for the credential that wins. A holder paused past its lease's expiry
/// (a stopped process, a long garbage collection elsewhere) can therefore never overwrite a
/// newer credential.
///
/// **Threads.** Each completion runs once, on any thread, possibly before the call returns; the
/// queue moves to its scheduler before calling its policy. A completion must not be called while
/// the coordinator holds a lock of its own that the caller could need.
public protocol CredentialCoordinator<Credential>: Sendable {
    /// The credential the queues share.
    associatedtype Credential: Sendable

    /// Asks for the right to replace the credential of `generation`.
    ///
    /// Answers `.lease` when the caller may refresh now (no credential newer than `generation`
    /// exists and no other lease is live), `.published` as soon as a newer credential exists
    /// (at once, or when the live lease's holder publishes), or an error (the coordinator could
    /// not decide: its store unreachable, or `generation` newer than any it knows). While another
    /// holder's lease is live it waits, at most until that lease expires, then decides again.
    func acquire(
        replacing generation: UInt64,
        completion: @escaping @Sendable (Result<CredentialGrant<Credential>, any Error>) -> Void)

    /// Publishes `credential` as the successor of `lease.generation`.
    ///
    /// Answers `.accepted` with the new generation, or `.refused` when the lease was superseded
    /// (another lease was granted for its generation, or a newer credential was published): the
    /// caller then asks again with `acquire`, which answers with the winner's credential once it
    /// is published. An error means nothing was published.
    func publish(
        _ credential: Credential, under lease: CredentialLease,
        completion: @escaping @Sendable (Result<PublishOutcome, any Error>) -> Void)

    /// Gives `lease` up without publishing (the refresh failed): a waiting caller may take a lease
    /// at once instead of waiting for its expiry. Releasing a superseded lease does nothing.
    func release(_ lease: CredentialLease)
}

/// The right to refresh the credential of one generation, until it expires.
public struct CredentialLease: Sendable, Hashable, CustomStringConvertible {
    /// The generation of the credential it allows to replace.
    public var generation: UInt64
    /// Its fencing number: grows with every lease granted, so that a publish under an older lease
    /// for the same generation is told from one under the newest.
    public var fence: UInt64

    /// A lease for `generation` with fencing number `fence`.
    public init(generation: UInt64, fence: UInt64) {
        self.generation = generation
        self.fence = fence
    }

    /// `lease <fence> on generation <generation>`.
    public var description: String { "lease \(self.fence) on generation \(self.generation)" }
}

/// What `CredentialCoordinator.acquire` decided.
public enum CredentialGrant<Credential: Sendable>: Sendable {
    /// Refresh the credential, then `publish` it under this lease (or `release` it).
    case lease(CredentialLease)
    /// A newer credential exists: use it, no refresh needed.
    case published(Credential, generation: UInt64)
}

/// What `CredentialCoordinator.publish` decided.
public enum PublishOutcome: Sendable, Hashable {
    /// Published: the credential now has this generation.
    case accepted(generation: UInt64)
    /// Refused: the lease was stale; nothing was published.
    case refused
}

/// Why a coordinator could not decide.
public enum CredentialCoordinatorError: Error, Hashable, CustomStringConvertible {
    /// Asked to replace `asked`, newer than the newest generation it knows, `current`: the queue
    /// was given a generation its coordinator never published.
    case generationAhead(asked: UInt64, current: UInt64)

    /// What happened and what to do, in one sentence.
    public var description: String {
        switch self {
        case .generationAhead(let asked, let current):
            return "credential coordinator asked to replace generation \(asked), but the newest it knows is "
                + "\(current); give RequestQueue the generation the coordinator published with the credential"
        }
    }
}

/// A new credential as a refresh through the coordinator ended: refreshed here, or adopted.
struct CoordinatedCredential<Credential: Sendable>: Sendable {
    var credential: Credential
    var generation: UInt64
    /// Published by another holder (no `Policy.refresh` here), rather than refreshed here.
    var adopted: Bool
    /// Publishes of this queue that were refused on the way (stale leases).
    var refusedPublishes: Int
}
