#!/usr/bin/env bash
# Builds and runs Examples/DefaultExecutorFactory, a program whose default executors are
# PoolExecutorFactory's (SerialExperimentalExecutors), and fails unless every claim it prints
# ("...: true|false") is true: tasks and sleeps on the WorkerPool and its wheel, the main actor
# on the main thread, no thread but the main one and the pool's (no Dispatch thread).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="${1:-$PWD/.build-default-executor}"
swift build --package-path Examples/DefaultExecutorFactory --scratch-path "$scratch"
output=$(timeout 60 "$scratch/debug/PoolMain")
echo "$output"
if ! grep -q ': true$' <<<"$output" || grep -q ': false$' <<<"$output"; then
    echo "PoolMain: a claim above is false (or none was printed)" >&2
    exit 1
fi
echo "PoolMain: every claim holds"
