#!/usr/bin/env bash
# The comparison for scripts/simulation-mutants.sh: does the ordinary stress suite, under
# ThreadSanitizer, find each mutant of Verification/simulation-mutants/? For each: apply it to a
# worktree of HEAD (kept in .build-mutants/tsan-tree), build with --sanitize=thread (one scratch
# folder for all), and run the stress suite of the mutant's component up to RUNS times (10),
# stopping at the first failing run (a failed test, a crash, a ThreadSanitizer report, or a run
# over 600 s). Prints one line per mutant and writes each run's output to
# .build-mutants/stress-NAME.log. A failure is not always the mutant's: read the log.
#
# Usage: bash scripts/stress-mutants.sh [NAME ...]   (default: every patch)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/.build-mutants"
tree="$work/tsan-tree"
scratch="$work/tsan-scratch"
runs="${RUNS:-10}"
build=(buildslot swift build --build-tests --sanitize=thread --package-path "$tree" --scratch-path "$scratch")
command -v buildslot >/dev/null || build=("${build[@]:1}")
export SERIAL_INTERNAL_CHECKS=1  # as CI builds its sanitizer runs

# The stress suite that runs each mutant's code: none starts a StallWatchdog, and none puts
# delayed work on a pooled queue (so due-behind-hops runs today's path there; measured anyway).
suite_of() {
    case "$1" in
        private-next | release-without-blocking | due-behind-hops) echo WorkerPoolStressTests ;;
        lost-wakeup) echo SerialQueueStressTests ;;
        coordinator-ignores-lease) echo CoordinatedRefreshStressTests ;;
        watchdog-rearm) echo none ;;
        *) echo StressTests ;;
    esac
}

source "$root/scripts/mutant-worktree.sh"

for name in "${names[@]}"; do
    log="$work/stress-$name.log"
    suite="$(suite_of "$name")"
    if [ "$suite" = none ]; then
        echo "stress $name: not run (no stress test runs its code)"
        continue
    fi
    reset_mutant_tree
    git -C "$tree" apply "$root/Verification/simulation-mutants/$name.patch"
    if ! "${build[@]}" >"$log" 2>&1; then
        echo "stress $name: build failed (see $log)"
        continue
    fi
    started=$SECONDS
    verdict="not found in $runs runs"
    for run in $(seq 1 "$runs"); do
        status=0
        (cd "$tree" && timeout 600 "$scratch/debug/swift-serial-runtimePackageTests.xctest" \
            --testing-library swift-testing --filter "$suite") >>"$log" 2>&1 || status=$?
        if [ "$status" -ne 0 ] || grep -q "WARNING: ThreadSanitizer" "$log"; then
            verdict="found in run $run of $runs (exit $status)"
            break
        fi
    done
    echo "stress $name ($suite, ThreadSanitizer): $verdict, $((SECONDS - started)) s"
done
