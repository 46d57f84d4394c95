// The all-traits consumer of scripts/check-trait-consumers.sh: a program as a user writes it
// against the runtime with every trait enabled, touching each integration once. It talks to
// nothing but 127.0.0.1 (port 1, where nothing listens, so network attempts fail fast).
import Logging
import SerialHTTPClient
import SerialLifecycle
import SerialLogging
import SerialMetrics
import SerialPostgres
import SerialRuntime
import SerialTracing

SerialTracing.propagateServiceContext()

let queue = SerialQueue(label: "consumer")
let reporter = SerialMetricsReporter()
reporter.watch(queue)
queue.sync {}

let transport = HTTPClientTransport(configuration: .init(), defaultAttemptTimeout: .seconds(2))
let outcome = await withCheckedContinuation { continuation in
    transport.send(HTTPRequest(url: "http://127.0.0.1:1/"), credential: BearerToken("t0")) {
        continuation.resume(returning: $0)
    }
}
try await transport.shutdown()
if case .success(let response) = outcome { fatalError("consumer: unexpected HTTP answer \(response.status)") }

do {
    let coordinator = try await PostgresCredentialCoordinator<String>.connect(
        .init(host: "127.0.0.1", port: 1, username: "nobody", database: "none", name: "token",
            connectTimeout: .seconds(2)),
        initial: "t0", codec: .string)
    await coordinator.close()
    fatalError("consumer: unexpected PostgreSQL connection on port 1")
} catch {
    // .unreachable within connectTimeout: nothing listens on port 1.
}

// Built, not run: running it needs a ServiceGroup and a signal.
_ = SerialRuntimeService(logger: Logger(label: "consumer"), stages: [.shutDown(queue)])
let report = queue.shutdown(logger: Logger(label: "consumer"))
precondition(report.cancelledWork == 0, "consumer: the queue dropped work")
print("consumer: Logging, Metrics, Lifecycle, Tracing, HTTPClient and Postgres work from one package with every trait")
