// swift-tools-version: 6.1
import PackageDescription

// A program whose default executors are PoolExecutorFactory's (SerialExperimentalExecutors): a
// package of its own because swiftc 6.3.1 installs a program's DefaultExecutorFactory only with
// availability checking off, an unsafe flag that the root package must not carry (a dependent
// could not build it). scripts/check-default-executor.sh builds and runs it; CI runs that.
// SwiftPM names a path dependency after its folder, whose name a clone does not fix: the root
// package's identity is the folder two levels above this manifest.
let rootPackage: String = {
    let components = Context.packageDirectory.split(separator: "/")
    guard components.count >= 3 else {
        fatalError("Examples/DefaultExecutorFactory/Package.swift: no root package above \(Context.packageDirectory)")
    }
    return String(components[components.count - 3])
}()

let package = Package(
    name: "DefaultExecutorFactory",
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(
            name: "PoolMain",
            dependencies: [.product(name: "SerialExperimentalExecutors", package: rootPackage)],
            swiftSettings: [.unsafeFlags(["-Xfrontend", "-disable-availability-checking"])]
        )
    ],
    swiftLanguageModes: [.v6]
)
