// swift-tools-version: 6.1
import PackageDescription

// The integrations' end-to-end tests, demos, benchmark and fleet programs: test support that needs
// heavy peers (a Hummingbird server on loopback, a PostgreSQL cluster, worker processes). The
// integrations themselves are products of the root package behind its traits; this package depends
// on it by path with every trait enabled, and nothing depends on this package.

/// Every integration trait of the root package (see its Package.swift).
let allTraits: Set<Package.Dependency.Trait> = ["Logging", "Metrics", "Lifecycle", "Tracing", "HTTPClient", "Postgres"]

/// A product of the root package.
func runtime(_ product: String) -> Target.Dependency {
    .product(name: product, package: "swift-serial-runtime")
}

let package = Package(
    name: "swift-serial-runtime-integrations",
    products: [
        .executable(name: "http-demo", targets: ["http-demo"]),
        .executable(name: "http-benchmark", targets: ["http-benchmark"]),
        .executable(name: "fleet-worker", targets: ["fleet-worker"]),
        .executable(name: "fleet-demo", targets: ["fleet-demo"]),
    ],
    dependencies: [
        // Named: a path dependency's identity is otherwise its folder name, which differs by clone.
        .package(name: "swift-serial-runtime", path: "..", traits: allTraits),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // Default traits off: neither swift-configuration nor full Foundation is needed here.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
    ],
    targets: [
        // A Hummingbird server on 127.0.0.1 whose handlers keep their own counts (tests, demo, benchmark).
        .target(
            name: "LoopbackServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                runtime("SerialTesting"),  // its seeded generator
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),  // its graceful stop
            ]),
        // The fleet scenario shared by its test and its demo: a PostgreSQL cluster in a temporary
        // folder, the rotating auth server, worker processes and their reports (test support).
        .target(
            name: "FleetSupport",
            dependencies: [
                "LoopbackServer", runtime("SerialRuntime"), runtime("SerialHTTPClient"), runtime("SerialPostgres"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        // One replica of the fleet: a RequestQueue with 100 requests in flight (a child process).
        .executableTarget(
            name: "fleet-worker",
            dependencies: ["FleetSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .executableTarget(
            name: "fleet-demo",
            dependencies: ["FleetSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .executableTarget(
            name: "http-demo",
            dependencies: [
                "LoopbackServer", runtime("SerialRuntime"), runtime("SerialHTTPClient"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "http-benchmark",
            dependencies: [
                "LoopbackServer", runtime("SerialRuntime"), runtime("SerialHTTPClient"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .testTarget(
            name: "SerialHTTPClientTests",
            dependencies: [
                "LoopbackServer", runtime("SerialRuntime"), runtime("SerialHTTPClient"), runtime("SerialTesting"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .testTarget(
            name: "SerialTracingTests",
            dependencies: [
                "LoopbackServer", runtime("SerialRuntime"), runtime("SerialTesting"), runtime("SerialTracing"),
                runtime("SerialHTTPClient"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]),
        // swift-async-algorithms' timer and debounce on WheelClock, real and virtual.
        .testTarget(
            name: "SerialAsyncAlgorithmsTests",
            dependencies: [
                runtime("SerialRuntime"), runtime("SerialTesting"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ]),
        .testTarget(
            name: "SerialPostgresTests",
            dependencies: [
                "FleetSupport", "LoopbackServer", runtime("SerialRuntime"), runtime("SerialHTTPClient"),
                runtime("SerialPostgres"),
            ]),
        // The logging, metrics and lifecycle integrations against the test kits of their peers.
        .testTarget(
            name: "SerialIntegrationsTests",
            dependencies: [
                runtime("SerialRuntime"), runtime("SerialLogging"), runtime("SerialMetrics"), runtime("SerialLifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
