/// One serial executor under test, reduced to the operations every row needs. Rows are
/// generic over it, so each peer's calls are specialised and inlined like direct calls.
protocol Peer: Sendable {
    /// The table column this peer fills.
    static var column: Column { get }

    /// Creates the executor (and whatever thread it needs).
    init(label: String)

    /// Enqueues `work` to run after everything enqueued before it (`async` / `execute`).
    func execute(_ work: @escaping @Sendable () -> Void)

    /// Runs an empty body at its turn and returns after it ran: the peer's nearest `sync`.
    func syncCall()

    /// Ends the executor and reclaims its thread.
    func close()
}

extension Peer {
    /// Returns once everything enqueued before this call has run.
    func drain() {
        let done = Latch()
        self.execute { done.countDown() }
        done.wait(seconds: 300, "\(Self.column) draining")
    }
}
