// swift-tools-version: 6.1
import PackageDescription

// Integrations of swift-serial-runtime with the server ecosystem. A package of its own, so the
// root package's library products keep zero dependencies.
//
// The root package is a path dependency, which SwiftPM names after its folder; CI clones into a
// folder whose name we do not choose, so the name is read from where this manifest sits.
let rootPackage: String = {
    let components = Context.packageDirectory.split(separator: "/")
    guard components.count >= 2 else {
        fatalError("Integrations/Package.swift: cannot find the root package above \(Context.packageDirectory)")
    }
    return String(components[components.count - 2])
}()
let serialRuntime = Target.Dependency.product(name: "SerialRuntime", package: rootPackage)
let package = Package(
    name: "serial-runtime-integrations",
    products: [
        .library(name: "SerialLogging", targets: ["SerialLogging"]),
        .library(name: "SerialMetrics", targets: ["SerialMetrics"]),
        .library(name: "SerialLifecycle", targets: ["SerialLifecycle"]),
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // Stall reports and shutdown reports through a swift-log Logger.
        .target(
            name: "SerialLogging",
            dependencies: [
                serialRuntime,
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Queue and service figures as swift-metrics counters, gauges and timers.
        .target(
            name: "SerialMetrics",
            dependencies: [
                serialRuntime,
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        // An ordered shutdown of queues and services as a swift-service-lifecycle Service.
        .target(
            name: "SerialLifecycle",
            dependencies: [
                serialRuntime,
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "SerialIntegrationsTests",
            dependencies: [
                "SerialLogging", "SerialMetrics", "SerialLifecycle",
                serialRuntime,
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
