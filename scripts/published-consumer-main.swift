// The scratch consumer of scripts/check-published-integrations.sh: a program as a user writes it
// against the published packages. It talks to nothing but 127.0.0.1.
import SerialHTTPClient
import SerialMetrics
import SerialRuntime

let queue = SerialQueue(label: "consumer")
let reporter = SerialMetricsReporter()
reporter.watch(queue)
queue.sync {}

let transport = HTTPClientTransport(configuration: .init(), defaultAttemptTimeout: .seconds(2))
let outcome = await withCheckedContinuation { continuation in
    // Port 1 on loopback: nothing listens, so the attempt fails fast, as it should.
    transport.send(HTTPRequest(url: "http://127.0.0.1:1/"), credential: BearerToken("t0")) { continuation.resume(returning: $0) }
}
try await transport.shutdown()
switch outcome {
case .success(let response): print("consumer: unexpected answer \(response.status)")
case .failure: print("consumer: HTTPClientTransport and SerialMetricsReporter work from the published packages")
}
