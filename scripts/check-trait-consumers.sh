#!/usr/bin/env bash
# Checks the runtime the way a user meets it: one package, one URL, integrations behind traits.
# Offline: this commit is cloned bare and tagged (a file:// URL), and scratch packages depend on it
# by URL and version:
#   - with no trait: the dependency tree is this package alone;
#   - with each trait: this package's dependencies are exactly that trait's packages
#     (`swift package show-dependencies`, resolved from scratch for each);
#   - a consumer with no trait builds and runs;
#   - one consumer with every trait builds and runs, touching each integration.
# CONSUMER_BUILD_EACH_TRAIT=1 also builds and runs a consumer of each trait alone (its module
# compiles without the other traits); each costs a build of the runtime with that trait.
# Commit first: the check sees HEAD, not the work tree.
#
#   scripts/check-trait-consumers.sh [--keep]   (--keep leaves the scratch folder for inspection)
#
# CONSUMER_SCRATCH_PATH=DIR builds the consumers in DIR instead of their own .build folders.
# CI passes Integrations/.build, where the heavy dependencies were just built at the same
# versions: SwiftPM reuses what compiles identically (SwiftNIO, AsyncHTTPClient, postgres-nio)
# and builds only what differs (the runtime, checked out from the URL, and the consumers).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
version="${CONSUMER_VERSION:-0.0.1}"
work="$(mktemp -d)"
if [ "${1:-}" = "--keep" ]; then echo "scratch folder: $work"; else trap 'rm -rf "$work"' EXIT; fi
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "check-trait-consumers: note: uncommitted changes are not part of the check (it clones HEAD)" >&2
fi

git clone -q --bare "$root" "$work/swift-serial-runtime.git"
git -C "$work/swift-serial-runtime.git" tag "$version" HEAD
url="file://$work/swift-serial-runtime.git"
build_flags=()
if [ -n "${CONSUMER_SCRATCH_PATH:-}" ]; then build_flags=(--scratch-path "$(realpath "$CONSUMER_SCRATCH_PATH")"); fi

# Each trait and this package's direct dependencies with it (package identities), as the root
# manifest declares them. Their own dependencies follow and are printed, not pinned.
declare -A expected=(
    [Logging]="swift-log"
    [Metrics]="swift-metrics"
    [Lifecycle]="swift-log swift-service-lifecycle"
    [Tracing]="swift-distributed-tracing"
    [HTTPClient]="async-http-client swift-distributed-tracing swift-nio"
    [Postgres]="postgres-nio swift-crypto swift-log swift-nio swift-nio-ssl"
)
all_traits=(Logging Metrics Lifecycle Tracing HTTPClient Postgres)
declare -A module=([Logging]=SerialLogging [Metrics]=SerialMetrics [Lifecycle]=SerialLifecycle
    [Tracing]=SerialTracing [HTTPClient]=SerialHTTPClient [Postgres]=SerialPostgres)

# scratch NAME TRAITS PRODUCTS [EXTRA_DEPENDENCY]: a package depending on the runtime by URL with
# TRAITS (a Swift array literal) and an executable using PRODUCTS (Swift array elements).
scratch() {
    local name="$1" traits="$2" products="$3" extra="${4:-}"
    mkdir -p "$work/$name/Sources/$name"
    cat > "$work/$name/Package.swift" <<MANIFEST
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "$name",
    dependencies: [
        .package(url: "$url", from: "$version", traits: $traits),$extra
    ],
    targets: [.executableTarget(name: "$name", dependencies: [$products])]
)
MANIFEST
}

# tree NAME: the identities of every package in NAME's dependency tree, below the runtime.
tree() {
    (cd "$work/$1" && swift package resolve >/dev/null && swift package show-dependencies --format json) \
        > "$work/$1.json"
}

product() { echo ".product(name: \"$1\", package: \"swift-serial-runtime\")"; }

echo "== no trait: the dependency tree is this package alone"
scratch no-trait "[]" "$(product SerialRuntime)"
echo 'import SerialRuntime
let queue = SerialQueue(label: "no-trait")
print("no-trait consumer:", queue.sync { "ok" })' > "$work/no-trait/Sources/no-trait/main.swift"
tree no-trait
python3 - "$work/no-trait.json" <<'PY'
import json, sys
tree = json.load(open(sys.argv[1]))
names = [d["identity"] for d in tree["dependencies"]]
assert names == ["swift-serial-runtime"], f"a consumer with no trait resolves {names}"
below = tree["dependencies"][0]["dependencies"]
assert below == [], f"with no trait the runtime brings {[d['identity'] for d in below]}"
print("no trait: swift-serial-runtime, and nothing below it")
PY

for trait in "${all_traits[@]}"; do
    echo "== trait $trait: exactly its packages"
    name="trait-$(echo "$trait" | tr '[:upper:]' '[:lower:]')"
    scratch "$name" "[\"$trait\"]" "$(product SerialRuntime), $(product "${module[$trait]}")"
    printf 'import SerialRuntime\nimport %s\nprint("trait %s consumer: ok")\n' "${module[$trait]}" "$trait" \
        > "$work/$name/Sources/$name/main.swift"
    tree "$name"
    python3 - "$work/$name.json" "$trait" "${expected[$trait]}" <<'PY'
import json, sys
tree, trait, expected = json.load(open(sys.argv[1])), sys.argv[2], sorted(sys.argv[3].split())
names = [d["identity"] for d in tree["dependencies"]]
assert names == ["swift-serial-runtime"], f"trait {trait}: the consumer resolves {names} at its top"
runtime = tree["dependencies"][0]
direct = sorted(d["identity"] for d in runtime["dependencies"])
assert direct == expected, f"trait {trait}: the runtime brings {direct}, expected {expected}"
def walk(node, seen):
    for d in node["dependencies"]:
        seen.add(d["identity"]); walk(d, seen)
    return seen
print(f"trait {trait}: {' '.join(direct)}; with theirs: {' '.join(sorted(walk(runtime, set())))}")
PY
done

echo "== a consumer with no trait builds and runs"
(cd "$work/no-trait" && swift build -q "${build_flags[@]}" && "$(swift build "${build_flags[@]}" --show-bin-path)/no-trait")

if [ "${CONSUMER_BUILD_EACH_TRAIT:-0}" = 1 ]; then
    for trait in "${all_traits[@]}"; do
        echo "== a consumer with trait $trait alone builds and runs"
        name="trait-$(echo "$trait" | tr '[:upper:]' '[:lower:]')"
        (cd "$work/$name" && swift build -q "${build_flags[@]}" && "$(swift build "${build_flags[@]}" --show-bin-path)/$name")
    done
fi

echo "== a consumer with every trait builds and runs"
products=""
for module in SerialRuntime SerialLogging SerialMetrics SerialLifecycle SerialTracing SerialHTTPClient SerialPostgres; do
    products+="$(product "$module"), "
done
products+='.product(name: "Logging", package: "swift-log")'
scratch all-traits "[$(printf '"%s", ' "${all_traits[@]}")]" "$products" \
    $'\n        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),'
cp scripts/trait-consumer-main.swift "$work/all-traits/Sources/all-traits/main.swift"
(cd "$work/all-traits" && swift build "${build_flags[@]}" && "$(swift build "${build_flags[@]}" --show-bin-path)/all-traits")
echo "trait consumers: all checks passed"
