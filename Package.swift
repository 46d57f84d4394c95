// swift-tools-version: 6.1
import PackageDescription

// Library targets depend on nothing outside the toolchain: Glibc, Synchronization and
// _Concurrency only. Benchmark peers live in Benchmarks/, a package of its own.

/// Whole-structure invariant walks (`_checkInvariants()` and the states' walks) are opt-in, as in
/// swift-collections: a package that depends on this one must not pay for them in its own debug
/// builds. The project's CI asks for them: `SERIAL_INTERNAL_CHECKS=1 swift build`. Debug builds
/// only even then, so release builds (the benchmarks) keep their complexity and allocations.
let internalChecksRequested = ["1", "true", "yes"].contains(Context.environment["SERIAL_INTERNAL_CHECKS"] ?? "")
let internalChecks: [SwiftSetting] =
    internalChecksRequested ? [.define("SERIAL_INTERNAL_CHECKS", .when(configuration: .debug))] : []

/// The DocC plugin is resolved only when documentation is built (`SERIAL_DOCS=1`, see
/// scripts/docs.sh): dependents and ordinary builds never fetch it, and no product depends on it.
let documentationDependencies: [Package.Dependency] =
    Context.environment["SERIAL_DOCS"] == "1"
    ? [.package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0")] : []

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
    ],
    traits: [
        .trait(
            name: "Simulation",
            description: "Runs the runtime's threads under a seeded deterministic scheduler (tests only)."),
    ],
    dependencies: documentationDependencies,
    targets: [
        // Layers, lowest first. Each imports only what is below it.
        .target(name: "SerialCore", swiftSettings: internalChecks + simulation),
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
        .testTarget(name: "SerialCoreTests", dependencies: ["SerialCore", "SerialRuntime", "SerialTesting", "SerialTestSupport"]),
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
    ],
    swiftLanguageModes: [.v6]
)
