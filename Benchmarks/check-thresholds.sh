#!/usr/bin/env bash
# Gates CI on allocation counts only: runs the package-benchmark suites and compares each
# benchmark's p90 mallocCountTotal with the ceiling committed in Thresholds/
# (<Target>.<Benchmark>.p90.json). Wall clock is recorded by the suites but not gated: it is
# too noisy on shared CI machines.
#
#   Benchmarks/check-thresholds.sh            check (exit 0: at or below the ceilings; 1: above a
#                                             ceiling, or the build or run failed)
#   Benchmarks/check-thresholds.sh --update   re-record the ceilings after an intended change
#
# Runs without a terminal: stdin is closed and the plugin's permissions are given up front.
set -euo pipefail
cd "$(dirname "$0")"

# Only the gated metric is measured, which also keeps the run short.
common=(--metric mallocCountTotal --no-progress)

if [[ "${1:-}" == "--update" ]]; then
    swift package --disable-sandbox --allow-writing-to-package-directory \
        benchmark thresholds update "${common[@]}" </dev/null
    echo "check-thresholds: ceilings written to $(pwd)/Thresholds; review and commit them."
    exit 0
elif [[ $# -gt 0 ]]; then
    echo "usage: $0 [--update]" >&2
    exit 64
fi

if ! compgen -G "Thresholds/*.p90.json" >/dev/null; then
    echo "check-thresholds: no ceilings in $(pwd)/Thresholds; record them with $0 --update" >&2
    exit 1
fi

# `swift package` exits 1 for every failure of a plugin; the plugin names its reason on the
# last lines (error: benchmarkThresholdRegression / benchmarkThresholdImprovement / ...).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
swift package --disable-sandbox benchmark thresholds check "${common[@]}" </dev/null 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

if [[ $status -eq 0 ]]; then
    echo "check-thresholds: allocation counts within the ceilings."
    exit 0
elif grep -q "error: benchmarkThresholdImprovement" "$log"; then
    echo "check-thresholds: allocation counts below the ceilings (an improvement): passing;" \
        "lower the ceilings with $0 --update and commit them."
    exit 0
elif grep -q "error: benchmarkThresholdRegression" "$log"; then
    echo "check-thresholds: allocation counts ABOVE the ceilings in $(pwd)/Thresholds (table above)." \
        "Find the new allocation with 'swift package --package-path Benchmarks benchmark --allocation-stacks" \
        "--filter <name>'; if it is intended, re-record with $0 --update." >&2
    exit 1
else
    echo "check-thresholds: the benchmark run failed (exit $status) before any check (output above)." >&2
    exit 1
fi
