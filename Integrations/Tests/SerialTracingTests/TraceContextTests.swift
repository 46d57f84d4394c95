import InMemoryTracing
import LoopbackServer
import SerialHTTPClient
import SerialRuntime
import SerialTesting
import SerialTracing
import Testing
import Tracing

/// A span started in a handler is the parent of the spans of work that runs later on a queue, in
/// a timer callback, and of each attempt of a request (the re-send after a refresh and the
/// refresh included), and the HTTP requests carry its trace to the loopback server.
@Suite("Trace context across the runtime's hops", .serialized)
struct TraceContextTests {
    typealias HTTPQueue = RequestQueue<HTTPClientTransport>

    /// The process's tracer: in memory, injecting a W3C `traceparent` built from its ids (the
    /// in-memory tracer's own injection uses private header names). Bootstrapped once.
    static let tracer: InMemoryTracer = {
        let tracer = InMemoryTracer()
        InstrumentationSystem.bootstrap(TraceparentTracer(inner: tracer))
        SerialTracing.propagateServiceContext()
        return tracer
    }()

    @Test func workOnAQueueATimerAndEveryAttemptOfARequestBelongToTheHandlersTrace() async throws {
        let tracer = Self.tracer
        let server = try await LoopbackServer.start()
        let transport = HTTPClientTransport(configuration: .init())
        let scheduler = SerialQueue(label: "traced")
        let timers = TimerService(scheduler: scheduler)
        let tokenURL = server.url("/token")
        let policy = HTTPQueue.Policy(
            classify: HTTPClientTransport.classify,
            refresh: { _, done in
                withSpan("refresh") { _ in transport.fetchToken(HTTPRequest(.POST, url: tokenURL), completion: done) }
            })
        let requests = HTTPQueue(
            transport: transport, credential: BearerToken(server.currentToken), policy: policy, scheduler: scheduler)
        server.expireToken()  // the first attempt meets 401: a refresh, then a re-send
        let done = CallbackRecorder<String>("traced work")

        let handler: InMemorySpanContext = withSpan("handler") { span in
            // Each records after its span ended, so the span is among the finished ones by then.
            scheduler.async {
                withSpan("on the queue") { _ in }
                done.record("queue")
            }
            _ = try? timers.schedule(after: .milliseconds(5)) {
                withSpan("in a timer") { _ in }
                done.record("timer")
            }
            requests.submit(HTTPRequest(url: server.url("/items/1"))) { result in
                withSpan("completion") { _ in }
                done.record("request \(result.error == nil ? "ok" : "\(result)")")
            }
            return span.context.inMemorySpanContext!
        }
        let recorded = try await done.wait(forCount: 3, timeout: .seconds(20))
        #expect(recorded.contains("request ok"), "\(recorded)")

        let spans = tracer.finishedSpans.filter { $0.spanContext.traceID == handler.traceID }
        let children = Dictionary(grouping: spans.filter { $0.spanContext.parentSpanID == handler.spanID }, by: \.operationName)
        #expect(children["on the queue"]?.count == 1, "\(spans.map(\.operationName))")
        #expect(children["in a timer"]?.count == 1)
        #expect(children["completion"]?.count == 1)
        #expect(children["refresh"]?.count == 1)
        #expect(children["HTTP GET"]?.count == 2, "the first attempt and the re-send after the refresh")
        let refresh = try #require(children["refresh"]?.first)
        #expect(spans.contains { $0.operationName == "HTTP POST" && $0.spanContext.parentSpanID == refresh.spanContext.spanID })

        // The server saw each HTTP request carry the handler's trace.
        let arrivals = server.counts.arrivals.filter { $0.route == "items" || $0.route == "token" }
        #expect(arrivals.count == 3)
        for arrival in arrivals {
            #expect(arrival.traceparent.map(TraceparentTracer.traceID(of:)) == TraceparentTracer.hex(handler.traceID, 32),
                    "\(arrival.route) carried \(arrival.traceparent ?? "no traceparent")")
        }

        requests.shutdown()
        timers.stop()
        try? await transport.shutdown()
        await scheduler.run {}
        scheduler.shutdown()
        #expect(await server.stop())
    }

    @Test func workSubmittedOutsideAnySpanStartsItsOwnTrace() async throws {
        let tracer = Self.tracer
        let queue = SerialQueue(label: "untraced")
        let done = CallbackRecorder<InMemorySpanContext>("untraced work")
        queue.async {
            let context = withSpan("alone") { span in span.context.inMemorySpanContext! }
            done.record(context)
        }
        let context = try await done.wait(forCount: 1)[0]
        #expect(context.parentSpanID == nil)
        #expect(tracer.finishedSpans.contains { $0.spanContext == context })
    }
}

/// The example of `SerialTracing`'s doc comment: compiled, not run (the suite installs it once).
func serviceContextPropagationExample(queue: SerialQueue) {
    // example: SerialTracing
    SerialTracing.propagateServiceContext()   // once, at start-up, after bootstrapping the tracer
    withSpan("handle request") { _ in
        queue.async {
            withSpan("on the queue") { _ in }     // a child of "handle request", in the same trace
        }
    }
    // end example
}

/// The in-memory tracer, with its context injected as a W3C `traceparent` header.
struct TraceparentTracer: Tracer {
    typealias Span = InMemorySpan
    let inner: InMemoryTracer

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        self.inner.startSpan(
            operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() { self.inner.forceFlush() }

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        let value = "00-\(Self.hex(span.traceID, 32))-\(Self.hex(span.spanID, 16))-01"
        injector.inject(value, forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}

    /// The in-memory tracer's ids ("trace-1") as the hex of their bytes, left-padded with zeros
    /// to a W3C id's width.
    static func hex(_ id: String, _ width: Int) -> String {
        let digits = id.utf8.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// The trace id field of a `traceparent` value.
    static func traceID(of traceparent: String) -> String {
        let fields = traceparent.split(separator: "-")
        return fields.count == 4 ? String(fields[1]) : ""
    }
}
