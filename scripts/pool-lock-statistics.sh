#!/usr/bin/env bash
# The pool mutex's acquisitions per turn, contention and hold times in workloads shaped like
# compare's pooled rows: an instrumented release build (SERIAL_LOCK_STATISTICS=1), then the
# "Pool lock statistics" suite. Prints one "pool-lock:" line per workload.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="${LOCK_STATISTICS_SCRATCH_PATH:-.build-lockstats}"
SERIAL_LOCK_STATISTICS=1 swift build -c release --build-tests -Xswiftc -enable-testing --scratch-path "$scratch"
if ! output=$("$scratch/release/swift-serial-runtimePackageTests.xctest" --testing-library swift-testing \
    --filter PoolLockStatisticsTests 2>&1); then
    printf '%s\n' "$output" >&2
    exit 1
fi
grep "pool-lock:" <<<"$output"
