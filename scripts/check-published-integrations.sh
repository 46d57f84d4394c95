#!/usr/bin/env bash
# Checks the integrations the way a user meets them: publishes this commit's core and
# Integrations/ as two local git repositories with a version tag (file:// URLs, offline), then
# builds and runs a scratch consumer package that names both by URL and version and uses
# HTTPClientTransport and SerialMetricsReporter. Also checks that a consumer of the core alone
# resolves no dependency at all.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
version="${PUBLISH_VERSION:-0.0.1}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The core as a released repository: this commit, tagged.
git clone -q --bare "$root" "$work/swift-serial-runtime.git"
git -C "$work/swift-serial-runtime.git" tag "$version" HEAD
core_url="file://$work/swift-serial-runtime.git"

# The integrations as their release step publishes them.
bash scripts/publish-integrations.sh --version "$version" --core-url "$core_url" \
    --output "$work/swift-serial-runtime-integrations"

mkdir -p "$work/consumer/Sources/consumer" "$work/core-only/Sources/core-only"
cat > "$work/consumer/Package.swift" <<MANIFEST
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "consumer",
    dependencies: [
        .package(url: "$core_url", from: "$version"),
        .package(url: "file://$work/swift-serial-runtime-integrations", from: "$version"),
    ],
    targets: [
        .executableTarget(
            name: "consumer",
            dependencies: [
                .product(name: "SerialRuntime", package: "swift-serial-runtime"),
                .product(name: "SerialHTTPClient", package: "swift-serial-runtime-integrations"),
                .product(name: "SerialMetrics", package: "swift-serial-runtime-integrations"),
            ]),
    ]
)
MANIFEST
cp scripts/published-consumer-main.swift "$work/consumer/Sources/consumer/main.swift"

cat > "$work/core-only/Package.swift" <<MANIFEST
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "core-only",
    dependencies: [.package(url: "$core_url", from: "$version")],
    targets: [.executableTarget(name: "core-only", dependencies: [.product(name: "SerialRuntime", package: "swift-serial-runtime")])]
)
MANIFEST
echo 'import SerialRuntime
let queue = SerialQueue(label: "core-only")
print("core-only:", queue.sync { "ok" })' > "$work/core-only/Sources/core-only/main.swift"

echo "== a consumer of the core alone resolves nothing else"
(cd "$work/core-only" && swift package resolve >/dev/null && swift package show-dependencies --format json) > "$work/core-only.json"
python3 - "$work/core-only.json" <<'PY'
import json, sys
tree = json.load(open(sys.argv[1]))
names = [d["identity"] for d in tree["dependencies"]]
assert names == ["swift-serial-runtime"], names
assert tree["dependencies"][0]["dependencies"] == [], tree["dependencies"][0]["dependencies"]
print("core-only depends on:", names, "and nothing below it")
PY
(cd "$work/core-only" && swift build -q && .build/debug/core-only)

echo "== a consumer of the published integrations builds and runs"
(cd "$work/consumer" && swift build && .build/debug/consumer)
