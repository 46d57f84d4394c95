// swift-tools-version: 6.1
import PackageDescription

// Integrations of swift-serial-runtime with the server ecosystem. A package of its own, so the
// root package's library products keep zero dependencies. One target per integration; the
// loopback server is test support, never a product.

let package = Package(
    name: "swift-serial-runtime-integrations",
    products: [
        .library(name: "SerialLogging", targets: ["SerialLogging"]),
        .library(name: "SerialMetrics", targets: ["SerialMetrics"]),
        .library(name: "SerialLifecycle", targets: ["SerialLifecycle"]),
        .library(name: "SerialHTTPClient", targets: ["SerialHTTPClient"]),
        .library(name: "SerialTracing", targets: ["SerialTracing"]),
        .executable(name: "http-demo", targets: ["http-demo"]),
        .executable(name: "http-benchmark", targets: ["http-benchmark"]),
        .library(name: "SerialPostgres", targets: ["SerialPostgres"]),
        .executable(name: "fleet-worker", targets: ["fleet-worker"]),
        .executable(name: "fleet-demo", targets: ["fleet-demo"]),
    ],
    dependencies: [
        // Named: a path dependency's identity is otherwise its folder name, which differs by clone.
        .package(name: "swift-serial-runtime", path: ".."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        // Default traits off: neither swift-configuration nor full Foundation is needed here.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
    ],
    targets: [
        // Stall reports and shutdown reports through a swift-log Logger.
        .target(
            name: "SerialLogging",
            dependencies: [
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Queue and service figures as swift-metrics counters, gauges and timers.
        .target(
            name: "SerialMetrics",
            dependencies: [
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        // An ordered shutdown of queues and services as a swift-service-lifecycle Service.
        .target(
            name: "SerialLifecycle",
            dependencies: [
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // swift-distributed-tracing's ServiceContext carried across every hop of the runtime.
        .target(
            name: "SerialTracing",
            dependencies: [
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]),
        // A RequestTransport on AsyncHTTPClient (a client span per attempt, its context injected).
        .target(
            name: "SerialHTTPClient",
            dependencies: [
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // A Hummingbird server on 127.0.0.1 whose handlers keep their own counts (tests, demo, benchmark).
        .target(
            name: "LoopbackServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "SerialTesting", package: "swift-serial-runtime"),  // its seeded generator
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),  // its graceful stop
            ]),
        // A CredentialCoordinator on PostgreSQL: one credential refresh per fleet of processes.
        .target(
            name: "SerialPostgres",
            dependencies: [
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The fleet scenario shared by its test and its demo: a PostgreSQL cluster in a temporary
        // folder, the rotating auth server, worker processes and their reports (test support).
        .target(
            name: "FleetSupport",
            dependencies: ["LoopbackServer", "SerialHTTPClient", "SerialPostgres"]),
        // One replica of the fleet: a RequestQueue with 100 requests in flight (a child process).
        .executableTarget(name: "fleet-worker", dependencies: ["FleetSupport"]),
        .executableTarget(name: "fleet-demo", dependencies: ["FleetSupport"]),
        .executableTarget(name: "http-demo", dependencies: ["SerialHTTPClient", "LoopbackServer"]),
        .executableTarget(name: "http-benchmark", dependencies: ["SerialHTTPClient", "LoopbackServer"]),
        .testTarget(
            name: "SerialHTTPClientTests",
            dependencies: [
                "SerialHTTPClient", "LoopbackServer", .product(name: "SerialTesting", package: "swift-serial-runtime"),
            ]),
        .testTarget(
            name: "SerialTracingTests",
            dependencies: [
                "SerialTracing", "SerialHTTPClient", "LoopbackServer",
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "SerialTesting", package: "swift-serial-runtime"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]),
        // swift-async-algorithms' timer and debounce on WheelClock, real and virtual.
        .testTarget(
            name: "SerialAsyncAlgorithmsTests",
            dependencies: [
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "SerialTesting", package: "swift-serial-runtime"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ]),
        .testTarget(
            name: "SerialPostgresTests",
            dependencies: [
                "SerialPostgres", "FleetSupport", "LoopbackServer", "SerialHTTPClient",
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
            ]),
        .testTarget(
            name: "SerialIntegrationsTests",
            dependencies: [
                "SerialLogging", "SerialMetrics", "SerialLifecycle",
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
