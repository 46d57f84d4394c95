#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import AsyncHTTPClient
import Synchronization

/// Owns an `HTTPClient` for `HTTPClientTransport`: shuts it down once, when asked or, failing
/// that, when the last transport holding it goes away — an owned client is never leaked.
final class ClientOwner: Sendable {
    let client: HTTPClient
    private let isShutDown = Atomic<Bool>(false)

    init(client: HTTPClient) {
        self.client = client
    }

    func shutdown() async throws {
        guard self.claim() else { return }
        try await self.client.shutdown()
    }

    /// `true` for the one caller that gets to shut the client down.
    private func claim() -> Bool {
        !self.isShutDown.exchange(true, ordering: .acquiringAndReleasing)
    }

    deinit {
        // Forgotten: shut down without waiting (deinit cannot), so the client's connections
        // close and AsyncHTTPClient's not-shut-down check does not fire.
        if self.claim() { self.client.shutdown { _ in } }
    }
}

/// Counts a transport's HTTP requests in flight (shared by its copies).
final class FlightCounter: Sendable {
    private let value = Atomic<Int>(0)

    var count: Int { self.value.load(ordering: .relaxed) }

    func add(_ delta: Int) {
        self.value.add(delta, ordering: .relaxed)
    }
}
#endif  // HTTPClient
