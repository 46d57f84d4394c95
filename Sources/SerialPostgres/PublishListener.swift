#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
import Logging
import NIOCore
import PostgresNIO

/// LISTENs on the coordinator's channel on a connection of its own and turns each NOTIFY (a
/// publish or a release) into a `signal`. When the connection is lost it connects again after
/// `retryAfter`, and signals once connected (a NOTIFY may have been missed meanwhile); waiters
/// fall back on their backoff until then.
actor PublishListener {
    nonisolated let signal = PublishSignal()
    let configuration: PostgresConnection.Configuration
    let channel: String
    let retryAfter: Duration
    let logger: Logger
    private var task: Task<Void, Never>? = nil

    init(configuration: PostgresConnection.Configuration, channel: String, retryAfter: Duration, logger: Logger) {
        self.configuration = configuration
        self.channel = channel
        self.retryAfter = retryAfter
        self.logger = logger
    }

    func start() {
        guard self.task == nil else { return }
        let (configuration, channel, retryAfter, logger, signal) =
            (self.configuration, self.channel, self.retryAfter, self.logger, self.signal)
        self.task = Task {
            while !Task.isCancelled {
                do {
                    let connection = try await PostgresConnection.connect(
                        configuration: configuration, id: 0, logger: logger)
                    await withTaskCancellationHandler {
                        _ = try? await connection.listen(on: channel) { notifications in
                            signal.signal()
                            for try await _ in notifications { signal.signal() }
                        }
                    } onCancel: {
                        let _: EventLoopFuture<Void> = connection.close()
                    }
                    try? await connection.close()
                } catch {
                    // Unreachable for now: waiters poll on their backoff meanwhile.
                }
                try? await Task.sleep(for: retryAfter)
            }
        }
    }

    func stop() async {
        self.task?.cancel()
        await self.task?.value
        self.task = nil
    }
}
#endif  // Postgres
