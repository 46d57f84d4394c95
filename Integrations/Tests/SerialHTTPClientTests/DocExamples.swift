import SerialHTTPClient
import SerialRuntime

// The examples of Integrations/README.md and of SerialHTTPClient's doc comments, as
// `// example:` regions that scripts/check-readme-examples.sh compares with them. Compiled, not
// run: they address a server on 127.0.0.1:8080 that the tests do not start.

func transportReadmeExample() async throws {
    // example: Integrations README transport
    try await HTTPClientTransport.withTransport { transport in       // owns a client; shuts it down after the body
        let policy = RequestQueue<HTTPClientTransport>.Policy(
            classify: HTTPClientTransport.classify,                    // 2xx ok, 401 expired, 5xx/timeouts retried…
            refresh: { _, completion in                                 // one refresh per expiry, however many requests failed
                transport.fetchToken(HTTPRequest(.POST, url: "http://127.0.0.1:8080/token"), completion: completion)
            })
        let queue = RequestQueue(
            transport: transport, credential: BearerToken("t0"), policy: policy,
            configuration: .init(maximumConcurrent: 8), scheduler: SerialQueue(label: "api"))

        let result = await queue.response(
            for: HTTPRequest(url: "http://127.0.0.1:8080/items/1", attemptTimeout: .milliseconds(500)),
            priority: .high, timeout: .seconds(2))
        print(try result.get().bodyText)

        queue.shutdown()                                                 // queues first, then the client
    }
    // end example
}

func transportDocExample() async throws {
    // example: HTTPClientTransport
    try await HTTPClientTransport.withTransport { transport in
        let queue = RequestQueue(
            transport: transport, credential: BearerToken("t0"),
            policy: .init(classify: HTTPClientTransport.classify, refresh: { _, done in done(.success(BearerToken("t1"))) }),
            scheduler: SerialQueue(label: "api"))
        let result = await queue.response(for: HTTPRequest(url: "http://127.0.0.1:8080/items/1"), timeout: .seconds(2))
        queue.shutdown()
    }   // the client is shut down here, after the body, even when it throws
    // end example
}

func fetchTokenDocExample(transport: HTTPClientTransport) {
    // example: fetchToken
    let policy = RequestQueue<HTTPClientTransport>.Policy(
        classify: HTTPClientTransport.classify,
        refresh: { _, completion in
            transport.fetchToken(HTTPRequest(.POST, url: "http://127.0.0.1:8080/token"), completion: completion)
        })
    // end example
    _ = policy
}
