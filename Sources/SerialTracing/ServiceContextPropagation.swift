#if Tracing  // compiled only with the package trait Tracing (see Package.swift)
import SerialRuntime
import Tracing

/// swift-distributed-tracing's `ServiceContext` carried across every hop of the runtime.
///
/// ```swift
/// import SerialTracing
///
/// SerialTracing.propagateServiceContext()   // once, at start-up, after bootstrapping the tracer
/// withSpan("handle request") { _ in
///     queue.async {
///         withSpan("on the queue") { _ in }     // a child of "handle request", in the same trace
///     }
/// }
/// ```
///
/// Once installed, work submitted to a `SerialQueue` (`async`, `asyncAfter`), timer callbacks,
/// countdown handlers, poll queries and callbacks, and every attempt of a `RequestQueue` request
/// (retries and the credential refresh included) run with the `ServiceContext` that was current
/// where they were submitted: spans they start are children of the submitter's span, and
/// `HTTPClientTransport` injects it (`traceparent`) into each HTTP request. Work submitted with no
/// context runs with none.
public enum SerialTracing {
    /// Installs `ServiceContext` as the runtime's `WorkContext` (see `WorkContext.install`), for the
    /// whole process. Calling it again changes nothing.
    public static func propagateServiceContext() {
        WorkContext.install(WorkContext.Propagator(
            capture: { ServiceContext.current },
            restore: { context, work in
                guard let context = context as? ServiceContext else { return work() }
                ServiceContext.withValue(context) { work() }
            }))
    }
}
#endif  // Tracing
