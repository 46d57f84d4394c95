// swift-tools-version: 6.1
import PackageDescription

// Library targets depend on nothing outside the toolchain: Glibc, Synchronization and
// _Concurrency only. The integrations (swift-log, swift-metrics, ...) are products of this package
// behind non-default traits (the block "Integrations, one trait each" below): with no trait
// enabled, a dependent resolves no package but this one. Benchmark peers live in Benchmarks/, and
// the integrations' end-to-end tests, demos and fleet programs in Integrations/: packages of their
// own that nothing depends on.

/// Whole-structure invariant walks (`_checkInvariants()` and the states' walks) are opt-in, as in
/// swift-collections: a package that depends on this one must not pay for them in its own debug
/// builds. The project's CI asks for them: `SERIAL_INTERNAL_CHECKS=1 swift build`. Debug builds
/// only even then, so release builds (the benchmarks) keep their complexity and allocations.
let internalChecksRequested = ["1", "true", "yes"].contains(Context.environment["SERIAL_INTERNAL_CHECKS"] ?? "")
let internalChecks: [SwiftSetting] =
    internalChecksRequested ? [.define("SERIAL_INTERNAL_CHECKS", .when(configuration: .debug))] : []

/// Lock statistics (acquisitions, contention, hold times of every `PthreadMutex`) are compiled in
/// only for measuring: `SERIAL_LOCK_STATISTICS=1` (scripts/pool-lock-statistics.sh).
let lockStatisticsRequested = Context.environment["SERIAL_LOCK_STATISTICS"] == "1"
let lockStatistics: [SwiftSetting] = lockStatisticsRequested ? [.define("SERIAL_LOCK_STATISTICS")] : []

/// The DocC plugin is resolved only when documentation is built: `SERIAL_DOCS=1` (scripts/docs.sh)
/// or `SPI_GENERATE_DOCS` (set by the Swift Package Index, which appends the plugin itself only when
/// its URL is not in this file's text, as it is here). Dependents and ordinary builds never fetch
/// it, and no product depends on it.
let documentationRequested =
    Context.environment["SERIAL_DOCS"] == "1" || Context.environment["SPI_GENERATE_DOCS"] != nil
let documentationDependencies: [Package.Dependency] =
    documentationRequested ? [.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")] : []

// MARK: - Integrations, one trait each

/// Each integration is a product of this package whose sources compile only with its trait
/// (`#if Logging` ... around every file) and whose dependencies are conditional on that trait, so a
/// dependent that does not enable it resolves none of them. No trait is enabled by default.
///
///     .package(url: "https://github.com/OWNER/swift-serial-runtime.git", from: "1.0.0", traits: ["Logging"])
let integrationTraits: Set<Trait> = [
    .trait(name: "Logging", description: "SerialLogging: stall and shutdown reports through a swift-log Logger."),
    .trait(name: "Metrics", description: "SerialMetrics: queue and service figures as swift-metrics instruments."),
    .trait(
        name: "Lifecycle",
        description: "SerialLifecycle: an ordered shutdown of queues and services as a swift-service-lifecycle Service."),
    .trait(
        name: "Tracing",
        description: "SerialTracing: swift-distributed-tracing's ServiceContext carried across every hop of the runtime."),
    .trait(
        name: "HTTPClient",
        description: "SerialHTTPClient: a RequestTransport on AsyncHTTPClient, with a client span per attempt."),
    .trait(
        name: "Postgres",
        description: "SerialPostgres: a CredentialCoordinator on PostgreSQL (postgres-nio), one refresh per fleet."),
]

/// Declared unconditionally; SwiftPM resolves one only for a dependent that enables a trait whose
/// target uses it (checked by scripts/check-trait-consumers.sh).
let integrationDependencies: [Package.Dependency] = [
    .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    // Both already in postgres-nio's graph (it asks for swift-nio-ssl from 2.25.0 and swift-crypto
    // 3.9.0..<6.0.0): the Postgres trait resolves no package it did not before.
    .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
]

/// A dependency of an integration target, used only when `trait` is enabled.
func integration(_ product: String, _ package: String, trait: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: [trait]))
}

let integrationProducts: [Product] = [
    .library(name: "SerialLogging", targets: ["SerialLogging"]),
    .library(name: "SerialMetrics", targets: ["SerialMetrics"]),
    .library(name: "SerialLifecycle", targets: ["SerialLifecycle"]),
    .library(name: "SerialTracing", targets: ["SerialTracing"]),
    .library(name: "SerialHTTPClient", targets: ["SerialHTTPClient"]),
    .library(name: "SerialPostgres", targets: ["SerialPostgres"]),
]

let integrationTargets: [Target] = [
    .target(
        name: "SerialLogging",
        dependencies: ["SerialRuntime", integration("Logging", "swift-log", trait: "Logging")]),
    .target(
        name: "SerialMetrics",
        dependencies: ["SerialRuntime", integration("CoreMetrics", "swift-metrics", trait: "Metrics")]),
    .target(
        name: "SerialLifecycle",
        dependencies: [
            "SerialRuntime",
            integration("ServiceLifecycle", "swift-service-lifecycle", trait: "Lifecycle"),
            integration("Logging", "swift-log", trait: "Lifecycle"),
        ]),
    .target(
        name: "SerialTracing",
        dependencies: ["SerialRuntime", integration("Tracing", "swift-distributed-tracing", trait: "Tracing")]),
    .target(
        name: "SerialHTTPClient",
        dependencies: [
            "SerialRuntime",
            integration("Tracing", "swift-distributed-tracing", trait: "HTTPClient"),
            integration("AsyncHTTPClient", "async-http-client", trait: "HTTPClient"),
            integration("NIOCore", "swift-nio", trait: "HTTPClient"),
            integration("NIOHTTP1", "swift-nio", trait: "HTTPClient"),
            integration("NIOPosix", "swift-nio", trait: "HTTPClient"),
        ]),
    .target(
        name: "SerialPostgres",
        dependencies: [
            "SerialRuntime",
            integration("PostgresNIO", "postgres-nio", trait: "Postgres"),
            integration("NIOCore", "swift-nio", trait: "Postgres"),
            integration("Logging", "swift-log", trait: "Postgres"),
            integration("NIOSSL", "swift-nio-ssl", trait: "Postgres"),  // PostgresTLS
            integration("Crypto", "swift-crypto", trait: "Postgres"),  // CredentialSealing
        ]),
]

/// A documentation build (scripts/docs.sh, or the Swift Package Index with `SPI_GENERATE_DOCS`)
/// compiles every integration: all traits are enabled by default then, and only then.
let defaultTraits: Set<Trait> =
    documentationRequested ? [.default(enabledTraits: Set(integrationTraits.map(\.name)))] : []

// MARK: - Package

/// The `Simulation` trait (off by default) builds the seam in `SerialCore/System` with a deterministic
/// scheduler behind it: `SERIAL_SIMULATION` is defined for the targets that hold or drive it. Build it
/// apart from ordinary builds: `swift build --traits Simulation --scratch-path .build-sim`.
let simulation: [SwiftSetting] = [.define("SERIAL_SIMULATION", .when(traits: ["Simulation"]))]

let package = Package(
    name: "swift-serial-runtime",
    products: [
        .library(name: "SerialRuntime", targets: ["SerialRuntime"]),
        .library(name: "SerialTesting", targets: ["SerialTesting"]),
        // Experimental: built on Swift 6.3's executor SPI (SchedulingExecutor, ExecutorFactory),
        // which may change. Not part of SerialRuntime: a user opts in by naming this product.
        .library(name: "SerialExperimentalExecutors", targets: ["SerialExperimentalExecutors"]),
        .executable(name: "demo", targets: ["demo"]),
    ] + integrationProducts,
    traits: integrationTraits.union(defaultTraits).union([
        .trait(
            name: "Simulation",
            description: "Runs the runtime's threads under a seeded deterministic scheduler (tests only)."),
    ]),
    dependencies: integrationDependencies + documentationDependencies,
    targets: [
        // Layers, lowest first. Each imports only what is below it.
        .target(name: "SerialCore", swiftSettings: internalChecks + simulation + lockStatistics),
        .target(name: "SerialTimers", dependencies: ["SerialCore"], swiftSettings: internalChecks),
        .target(name: "SerialCountdown", dependencies: ["SerialCore", "SerialTimers"], swiftSettings: internalChecks),
        .target(name: "SerialPolling", dependencies: ["SerialCore", "SerialTimers"], swiftSettings: internalChecks),
        .target(name: "SerialRequests", dependencies: ["SerialCore", "SerialTimers"], swiftSettings: internalChecks),
        .target(
            name: "SerialRuntime",
            dependencies: ["SerialCore", "SerialTimers", "SerialCountdown", "SerialPolling", "SerialRequests"]
        ),
        .target(
            name: "SerialTesting", dependencies: ["SerialCore", "SerialTimers"],
            swiftSettings: internalChecks + simulation),
        .target(
            name: "SerialExperimentalExecutors", dependencies: ["SerialCore", "SerialTimers"],
            swiftSettings: internalChecks),
        .executableTarget(name: "demo", dependencies: ["SerialRuntime"]),

        // Test-only helpers: barrier, seeded generator, bounded waits, thread counts.
        .target(name: "SerialTestSupport", dependencies: ["SerialCore"], path: "Tests/SerialTestSupport"),
        .testTarget(
            name: "SerialCoreTests", dependencies: ["SerialCore", "SerialRuntime", "SerialTesting", "SerialTestSupport"],
            swiftSettings: lockStatistics),
        .testTarget(name: "SerialTimersTests", dependencies: ["SerialTimers", "SerialTesting", "SerialTestSupport"]),
        .testTarget(name: "SerialCountdownTests", dependencies: ["SerialCountdown", "SerialTesting", "SerialTestSupport"]),
        .testTarget(name: "SerialPollingTests", dependencies: ["SerialPolling", "SerialTesting", "SerialTestSupport"]),
        .testTarget(name: "SerialRequestsTests", dependencies: ["SerialRequests", "SerialTesting", "SerialTestSupport"]),
        .testTarget(
            name: "SerialExperimentalExecutorsTests",
            dependencies: ["SerialExperimentalExecutors", "SerialTesting", "SerialTestSupport"]),
        .testTarget(name: "SerialTestingTests", dependencies: ["SerialCore", "SerialTesting", "SerialTestSupport"]),
        // Every code block of README.md and of the doc comments, compiled (and the quick ones run);
        // scripts/check-readme-examples.sh keeps the blocks identical to these files.
        // (DefaultExecutorFactory/ is a package of its own: see its Package.swift.)
        .testTarget(
            name: "SerialExamples", dependencies: ["SerialRuntime", "SerialTesting", "SerialExperimentalExecutors"],
            path: "Examples",
            exclude: ["DefaultExecutorFactory"]),
        // Seeded, bounded, repeated concurrency scenarios; run under ThreadSanitizer in CI.
        .testTarget(name: "StressTests", dependencies: ["SerialRuntime", "SerialTesting", "SerialTestSupport"]),
        // The scheduler's own tests (every build) and scenarios on the runtime's real code under the
        // simulator (built with the Simulation trait only).
        .testTarget(
            name: "SimulationTests",
            dependencies: ["SerialCore", "SerialRuntime", "SerialTesting", "SerialTestSupport"],
            swiftSettings: simulation),
    ] + integrationTargets,
    swiftLanguageModes: [.v6]
)
