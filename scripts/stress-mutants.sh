#!/usr/bin/env bash
# The comparison for scripts/simulation-mutants.sh: does the ordinary stress suite, under
# ThreadSanitizer, find each mutant of Verification/simulation-mutants/? For each: apply it to a
# worktree of HEAD (kept in .build-mutants/tsan-tree), build with --sanitize=thread (one scratch
# folder for all), and run the stress suite of the mutant's component up to RUNS times (10),
# stopping at the first failing run (a failed test, a crash, a ThreadSanitizer report, or a run over 600 s). Prints one line
# per mutant and writes each run's output to .build-mutants/stress-NAME.log.
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

# The stress suites that exercise each mutant's code (none starts a StallWatchdog).
suite_of() {
    case "$1" in
        private-next | release-without-blocking | due-behind-hops) echo WorkerPoolStressTests ;;
        lost-wakeup) echo SerialQueueStressTests ;;
        coordinator-ignores-lease) echo CoordinatedRefreshStressTests ;;
        *) echo StressTests ;;
    esac
}

mkdir -p "$work"
# The worktree is kept between runs (git rewrites only the files that differ, so the build stays
# incremental); it is reset to this checkout's HEAD before each mutant and at the end.
head="$(git -C "$root" rev-parse HEAD)"
git -C "$root" worktree prune
if ! git -C "$tree" rev-parse --git-dir >/dev/null 2>&1; then
    rm -rf "$tree"
    git -C "$root" worktree add --quiet --detach "$tree" "$head"
fi
trap 'git -C "$tree" reset --quiet --hard "$head" >/dev/null 2>&1 || true' EXIT

if [ $# -gt 0 ]; then names=("$@"); else
    names=()
    for patch in "$root"/Verification/simulation-mutants/*.patch; do names+=("$(basename "$patch" .patch)"); done
fi

for name in "${names[@]}"; do
    log="$work/stress-$name.log"
    suite="$(suite_of "$name")"
    git -C "$tree" checkout --quiet --detach "$head" && git -C "$tree" reset --quiet --hard "$head"
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
