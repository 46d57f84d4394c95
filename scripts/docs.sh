#!/usr/bin/env bash
# Builds the DocC documentation of every library target and fails on any warning; first checks
# that every public declaration has a doc comment. The DocC plugin is a dependency only while
# SERIAL_DOCS=1 (or SPI_GENERATE_DOCS, the Swift Package Index's build: see .spi.yml), so
# dependents and ordinary builds never resolve it; every integration trait is enabled by default
# then too, so the integration modules are documented with their code (SerialLogging with the
# trait Logging, ..., SerialPostgres with Postgres), as the index builds them.
#
# Two passes, for time: the plugin plans a whole build per target (15-25 s each even when
# nothing changed: 7.5 min for 14 targets in CI), so
#  1. the plugin, as the index runs it, documents one target (its path works: it resolves, builds
#     with every trait, and converts);
#  2. one `swift package dump-symbol-graph` extracts every target's symbols with the options the
#     plugin uses (public, synthesized members, extension blocks), and the toolchain's `docc
#     convert` builds each target's catalog from them with --warnings-as-errors, as the plugin does.
# Output: <scratch>/plugins/Swift-DocC/outputs/SerialRuntime.doccarchive and
# <scratch>/docs/<Target>.doccarchive, where the scratch folder is .build-docs, or
# DOCS_SCRATCH_PATH: CI passes Integrations/.build, where the integrations' heavy dependencies
# were just built at the same versions, so SwiftPM reuses them (it rebuilds what compiles
# differently: this package as the root, and the DocC plugin).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 scripts/check-doc-comments.py

export SERIAL_DOCS=1
scratch="${DOCS_SCRATCH_PATH:-.build-docs}"
TARGETS=(SerialRuntime SerialCore SerialTimers SerialCountdown SerialPolling SerialRequests SerialTesting
    SerialExperimentalExecutors SerialLogging SerialMetrics SerialLifecycle SerialTracing SerialHTTPClient SerialPostgres)
# .spi.yml must name the same targets.
for target in "${TARGETS[@]}"; do
    grep -q "\b$target\b" .spi.yml || { echo "docs.sh: .spi.yml does not name $target" >&2; exit 1; }
done
docc="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
[[ -x "$docc" ]] || docc="$(command -v docc || true)"
[[ -n "$docc" ]] || { echo "docs.sh: no docc next to swift nor on PATH (it ships with the toolchain)" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== documentation through the DocC plugin, as the Swift Package Index builds it: ${TARGETS[0]}"
swift package --scratch-path "$scratch" generate-documentation --target "${TARGETS[0]}" \
    --warnings-as-errors 2>&1 | tee -a "$log"

echo "== symbol graphs of every target (one build)"
swift package --scratch-path "$scratch" dump-symbol-graph --emit-extension-block-symbols 2>&1 | tee -a "$log" \
    | grep -E "^Files written to " || true
graphs="$(sed -n 's/^Files written to //p' "$log" | tail -1)"
[[ -d "$graphs" ]] || { echo "docs.sh: dump-symbol-graph wrote no folder (log above)" >&2; exit 1; }
output="$scratch/docs"
rm -rf "$output" "$scratch/docs-graphs"
mkdir -p "$output"
for target in "${TARGETS[@]}"; do
    echo "== documentation: $target"
    # The target's own graphs only (its module, and its extensions of other modules), as the plugin passes them.
    own="$scratch/docs-graphs/$target"
    mkdir -p "$own"
    cp "$graphs/$target.symbols.json" "$own/"
    cp "$graphs/$target@"*.symbols.json "$own/" 2>/dev/null || true
    "$docc" convert "Sources/$target/$target.docc" --additional-symbol-graph-dir "$own" \
        --fallback-display-name "$target" --fallback-bundle-identifier "$target" \
        --output-path "$output/$target.doccarchive" --warnings-as-errors 2>&1 | tee -a "$log"
done
# --warnings-as-errors covers DocC's own diagnostics; this also catches compiler warnings
# printed while the plugin builds the targets for their symbol graphs. SwiftPM's warnings about
# another package's manifest ("warning: 'swift-distributed-tracing': found 1 file(s) which are
# unhandled") are that package's to fix, not ours.
if grep -E "(^|[^-])warning:" "$log" | grep -vE "^warning: '[^']+': " | grep -E . ||
    grep -E "^warning: 'swift-serial-runtime': " "$log"; then
    echo "documentation built with warnings (above)" >&2
    exit 1
fi
echo "documentation of ${#TARGETS[@]} targets built without warnings"
