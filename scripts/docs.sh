#!/usr/bin/env bash
# Builds the DocC documentation of every library target and fails on any warning; first checks
# that every public declaration has a doc comment. The DocC plugin is a dependency only while
# SERIAL_DOCS=1 (or SPI_GENERATE_DOCS, the Swift Package Index's build: see .spi.yml), so
# dependents and ordinary builds never resolve it; every integration trait is enabled by default
# then too, so the integration modules are documented with their code (SerialLogging with the
# trait Logging, ..., SerialPostgres with Postgres), as the index builds them.
# Output: <scratch>/plugins/Swift-DocC/outputs/<Target>.doccarchive, where the scratch folder is
# .build-docs, or DOCS_SCRATCH_PATH: CI passes Integrations/.build, where the integrations' heavy
# dependencies were just built at the same versions, so SwiftPM reuses them (it rebuilds what
# compiles differently: this package as the root, and the DocC plugin).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 scripts/check-doc-comments.py

export SERIAL_DOCS=1
TARGETS=(SerialRuntime SerialCore SerialTimers SerialCountdown SerialPolling SerialRequests SerialTesting
    SerialExperimentalExecutors SerialLogging SerialMetrics SerialLifecycle SerialTracing SerialHTTPClient SerialPostgres)
# .spi.yml must name the same targets.
for target in "${TARGETS[@]}"; do
    grep -q "\b$target\b" .spi.yml || { echo "docs.sh: .spi.yml does not name $target" >&2; exit 1; }
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for target in "${TARGETS[@]}"; do
    echo "== documentation: $target"
    swift package --scratch-path "${DOCS_SCRATCH_PATH:-.build-docs}" generate-documentation --target "$target" \
        --warnings-as-errors 2>&1 | tee -a "$log"
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
