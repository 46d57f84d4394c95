#if HTTPClient  // compiled only with the package trait HTTPClient (see Package.swift)
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import SerialRuntime
import Tracing

/// A `RequestTransport` on AsyncHTTPClient: each send is one HTTP request carrying the credential
/// as `Authorization: Bearer <token>`.
///
/// ```swift
/// try await HTTPClientTransport.withTransport { transport in
///     let queue = RequestQueue(
///         transport: transport, credential: BearerToken("t0"),
///         policy: .init(classify: HTTPClientTransport.classify, refresh: { _, done in done(.success(BearerToken("t1"))) }),
///         scheduler: SerialQueue(label: "api"))
///     let result = await queue.response(for: HTTPRequest(url: "http://127.0.0.1:8080/items/1"), timeout: .seconds(2))
///     queue.shutdown()
/// }   // the client is shut down here, after the body, even when it throws
/// ```
///
/// **Timeouts and cancellation.** Every attempt gets an HTTP deadline: the request's
/// `attemptTimeout` (else `defaultAttemptTimeout`), capped by the request's `deadline` (which
/// `RequestQueue.submit` sets from the request's timeout) plus a 100 ms grace, so that the
/// queue's timeout decides first and the cap is only a backstop. When the queue ends a request — by
/// `cancel()`, timeout or shutdown — `RequestQueue.submit` fires the request's
/// `HTTPRequestCancellation`, which cancels the HTTP request in flight: no connection is left
/// waiting for an answer nobody will read.
///
/// **Lifecycle.** A transport either borrows a client (`init(client:)`: its owner shuts it down,
/// after the queues that use it), or owns one (`withTransport`, or `init(configuration:)` with
/// `shutdown()`): an owned client is shut down by `withTransport` when its body returns, by
/// `shutdown()`, or at the latest when the last reference to the transport goes away.
///
/// **Shutdown order.** Queue, then client, then the queue's scheduler: an answer still in flight
/// when the queue shuts down is delivered through the scheduler (and ignored), so the scheduler
/// must keep accepting work until the client has shut down or `requestsInFlight` is 0.
///
/// **Threads.** `send` returns at once; the completion runs on one of the client's event loops.
///
/// **Tracing.** Each attempt is a client span ("HTTP GET", …) of the current `ServiceContext`
/// (the submitter's, once `SerialTracing.propagateServiceContext()` is installed), and its context
/// is injected into the request's headers by the bootstrapped instrument (`traceparent` for a
/// W3C tracer). With no tracer bootstrapped this costs a no-op span.
public struct HTTPClientTransport: RequestTransport {
    /// What this transport sends: a method, a URL, headers and an optional body.
    public typealias Request = HTTPRequest
    /// What a send answers with: the status, headers and body of the response.
    public typealias Response = HTTPResponse
    /// The credential sent with each request, as `Authorization: Bearer <token>`.
    public typealias Credential = BearerToken

    /// The client requests go through.
    public let client: HTTPClient
    /// The attempt timeout of requests that set none (`nil`: none).
    public let defaultAttemptTimeout: Duration?
    /// The largest response body accepted; a larger one fails the attempt (AsyncHTTPClient's
    /// `ResponseAccumulator.ResponseTooBigError`).
    public let maximumBodySize: Int
    private let owner: ClientOwner?
    private let flights = FlightCounter()

    /// HTTP requests this transport (and its copies) sent that have not ended yet.
    public var requestsInFlight: Int { self.flights.count }

    /// A transport on `client`, which stays the caller's to shut down (after every queue that
    /// uses this transport has been shut down).
    public init(client: HTTPClient, defaultAttemptTimeout: Duration? = nil, maximumBodySize: Int = 1 << 22) {
        self.client = client
        self.defaultAttemptTimeout = defaultAttemptTimeout
        self.maximumBodySize = maximumBodySize
        self.owner = nil
    }

    /// A transport that owns a new client made with `configuration`; `shutdown()` shuts it
    /// down (if nobody does, it is shut down when the last copy of this transport goes away).
    public init(
        configuration: HTTPClient.Configuration = .init(),
        defaultAttemptTimeout: Duration? = nil,
        maximumBodySize: Int = 1 << 22
    ) {
        let owner = ClientOwner(client: HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                                                   configuration: configuration))
        self.client = owner.client
        self.defaultAttemptTimeout = defaultAttemptTimeout
        self.maximumBodySize = maximumBodySize
        self.owner = owner
    }

    /// Sends `request` with `Authorization: Bearer <credential>`; the queue calls this.
    public func send(
        _ request: HTTPRequest,
        credential: BearerToken,
        completion: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void
    ) {
        self.send(request, bearer: credential, completion: completion)
    }

    /// Sends `request`, with `Authorization: Bearer <bearer>` when `bearer` is given (without
    /// one, e.g. to fetch a token); reports the response, whatever its status, or the error.
    /// A request whose cancellation has fired fails at once with `HTTPClientError.cancelled`.
    public func send(
        _ request: HTTPRequest,
        bearer: BearerToken?,
        completion: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void
    ) {
        let span = startSpan("HTTP \(request.method.rawValue)", ofKind: .client)
        let completion: @Sendable (Result<HTTPResponse, any Error>) -> Void = { outcome in
            switch outcome {
            case .success(let response): span.attributes["http.response.status_code"] = Int(response.status.code)
            case .failure(let error): span.recordError(error)
            }
            span.end()
            completion(outcome)
        }
        let clientRequest: HTTPClient.Request
        do {
            var headers = request.headers
            if let bearer { headers.replaceOrAdd(name: "Authorization", value: bearer.headerValue) }
            InstrumentationSystem.instrument.inject(span.context, into: &headers, using: HTTPHeadersInjector())
            clientRequest = try HTTPClient.Request(
                url: request.url, method: request.method, headers: headers, body: request.body.map { .byteBuffer($0) })
        } catch {
            completion(.failure(error))
            return
        }
        let task = self.client.execute(
            request: clientRequest,
            delegate: ResponseAccumulator(request: clientRequest, maxBodySize: self.maximumBodySize),
            eventLoop: .indifferent,
            deadline: self.deadline(for: request))
        self.flights.add(1)
        let flights = self.flights
        guard let key = request.cancellation.register(task) else {
            // `register` cancelled the task; its outcome is ignored, the completion runs now.
            task.futureResult.whenComplete { _ in flights.add(-1) }
            completion(.failure(HTTPClientError.cancelled))
            return
        }
        task.futureResult.whenComplete { outcome in
            flights.add(-1)
            request.cancellation.unregister(key)
            completion(outcome.map { HTTPResponse(status: $0.status, headers: $0.headers, body: $0.body) })
        }
    }

    /// How long after the request's own deadline its HTTP request is cut off at the latest: the
    /// queue's timeout decides first (the request ends `timedOut`, and the cancellation fires),
    /// this deadline is only the backstop.
    static let deadlineGrace: Duration = .milliseconds(100)

    /// The attempt's HTTP deadline: its timeout from now, capped by the request's deadline
    /// (plus `deadlineGrace`).
    private func deadline(for request: HTTPRequest) -> NIODeadline? {
        let now = MonotonicInstant.now()
        var remaining = (request.attemptTimeout ?? self.defaultAttemptTimeout)
        if let deadline = request.deadline {
            let left = (deadline > now ? now.duration(to: deadline) : .zero) + Self.deadlineGrace
            remaining = min(remaining ?? left, left)
        }
        guard let remaining else { return nil }
        return .now() + .nanoseconds(remaining.saturatingNanoseconds)
    }

    /// Shuts down the client this transport owns (requests in flight fail with
    /// `HTTPClientError.cancelled`); does nothing for a borrowed client or the second time.
    /// Shut the queues that use the transport down first.
    public func shutdown() async throws {
        try await self.owner?.shutdown()
    }
}

/// Writes a trace context's fields into HTTP headers.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
#endif  // HTTPClient
