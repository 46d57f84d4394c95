// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in a package of their own so the library keeps zero dependencies.
//
// The root package is a path dependency, and SwiftPM names a path dependency after its folder.
// CI clones into a folder whose name we do not choose, so the identity is derived from where
// this manifest sits (its parent folder) instead of being written down.
let rootPackage: String = {
    let components = Context.packageDirectory.split(separator: "/")
    guard components.count >= 2 else {
        fatalError("Benchmarks/Package.swift: cannot find the root package above \(Context.packageDirectory)")
    }
    return String(components[components.count - 2])
}()

let serialRuntime = Target.Dependency.product(name: "SerialRuntime", package: rootPackage)
let serialTesting = Target.Dependency.product(name: "SerialTesting", package: rootPackage)
let benchmark = Target.Dependency.product(name: "Benchmark", package: "benchmark")
let benchmarkPlugin = Target.PluginUsage.plugin(name: "BenchmarkPlugin", package: "benchmark")

/// A package-benchmark suite: an executable target under Benchmarks/<name>, where the plugin
/// discovers it. Benchmark names use only [A-Za-z0-9._-] (they name the threshold files).
@MainActor
func suite(_ name: String) -> Target {
    .executableTarget(
        name: name,
        dependencies: [serialRuntime, serialTesting, benchmark, "BenchmarkSupport"],
        path: "Benchmarks/\(name)",
        plugins: [benchmarkPlugin]
    )
}

let package = Package(
    name: "serial-runtime-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // The trait list replaces the default traits: MallocInterposer counts allocations; the
        // default RuntimeInterposer would pull a package that is not available here.
        .package(url: "https://github.com/ordo-one/benchmark.git", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // `swift run -c release --package-path Benchmarks compare [--json]`
        .executableTarget(
            name: "compare",
            dependencies: [
                serialRuntime,
                serialTesting,
                "AllocationCounter",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Counts the compare process's allocations (it replaces malloc and friends, forwarding to glibc's).
        .target(name: "AllocationCounter"),
        // package-benchmark suites: `swift package --package-path Benchmarks benchmark`;
        // allocation ceilings: `Benchmarks/check-thresholds.sh`.
        suite("SerialQueueBenchmarks"),
        suite("TimerBenchmarks"),
        suite("CountdownBenchmarks"),
        .target(name: "BenchmarkSupport", dependencies: [serialRuntime, benchmark]),
    ],
    swiftLanguageModes: [.v6]
)
