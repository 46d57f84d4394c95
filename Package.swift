// swift-tools-version: 6.1
import PackageDescription

// Library targets depend on nothing outside the toolchain: Glibc, Synchronization and
// _Concurrency only. Benchmark peers live in Benchmarks/, a package of its own.

/// Whole-structure invariant walks (`checkInvariants()`) run in debug builds only.
let internalChecks: [SwiftSetting] = [
    .define("SERIAL_INTERNAL_CHECKS", .when(configuration: .debug)),
]

let package = Package(
    name: "swift-serial-runtime",
    products: [
        .library(name: "SerialRuntime", targets: ["SerialRuntime"]),
        .library(name: "SerialTesting", targets: ["SerialTesting"]),
        .executable(name: "demo", targets: ["demo"]),
    ],
    targets: [
        // Layers, lowest first. Each imports only what is below it.
        .target(name: "SerialCore", swiftSettings: internalChecks),
        .target(name: "SerialTimers", dependencies: ["SerialCore"], swiftSettings: internalChecks),
        .target(name: "SerialCountdown", dependencies: ["SerialCore", "SerialTimers"], swiftSettings: internalChecks),
        .target(name: "SerialPolling", dependencies: ["SerialCore", "SerialTimers"], swiftSettings: internalChecks),
        .target(name: "SerialRequests", dependencies: ["SerialCore", "SerialTimers"], swiftSettings: internalChecks),
        .target(
            name: "SerialRuntime",
            dependencies: ["SerialCore", "SerialTimers", "SerialCountdown", "SerialPolling", "SerialRequests"]
        ),
        .target(name: "SerialTesting", dependencies: ["SerialCore"], swiftSettings: internalChecks),
        .executableTarget(name: "demo", dependencies: ["SerialRuntime"]),

        // Test-only helpers: barrier, seeded generator, bounded waits, thread counts.
        .target(name: "SerialTestSupport", dependencies: ["SerialCore"], path: "Tests/SerialTestSupport"),
        .testTarget(name: "SerialCoreTests", dependencies: ["SerialCore", "SerialRuntime", "SerialTesting", "SerialTestSupport"]),
        .testTarget(name: "SerialTimersTests", dependencies: ["SerialTimers", "SerialTesting", "SerialTestSupport"]),
        .testTarget(name: "SerialCountdownTests", dependencies: ["SerialCountdown", "SerialTesting", "SerialTestSupport"]),
        .testTarget(name: "SerialPollingTests", dependencies: ["SerialPolling", "SerialTesting", "SerialTestSupport"]),
        .testTarget(name: "SerialRequestsTests", dependencies: ["SerialRequests", "SerialTesting", "SerialTestSupport"]),
        // Seeded, bounded, repeated concurrency scenarios; run under ThreadSanitizer in CI.
        .testTarget(name: "StressTests", dependencies: ["SerialRuntime", "SerialTesting", "SerialTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
