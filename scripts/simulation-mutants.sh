#!/usr/bin/env bash
# Proof that the simulator finds bugs: each patch in Verification/simulation-mutants/ re-creates a
# bug this runtime really had. For each, one at a time: apply it to a worktree of HEAD (kept in
# .build-mutants/tree), build with the Simulation trait (one scratch folder for all, so each mutant
# rebuilds only what it changes), explore the scenario that must find it (ScenarioCatalog.mutants) over up to
# HUNT_LIMIT schedules (1,000), and replay the failure 10 times. Prints exactly one line per mutant,
#   mutant NAME: found after N schedules in S s, replayed identical K/K
# (or says it was not found), then `M mutants, F found`. Fails unless every mutant is found and
# replayed identically. Commit first: the worktree is HEAD, not the working copy.
#
# Usage: bash scripts/simulation-mutants.sh [NAME ...]   (default: every patch)
# Details (seed, kind, token) go to .build-mutants/NAME.log.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/.build-mutants"
tree="$work/tree"
scratch="$work/scratch"
limit="${HUNT_LIMIT:-1000}"
build=(buildslot swift build --build-tests --traits Simulation --package-path "$tree" --scratch-path "$scratch")
command -v buildslot >/dev/null || build=("${build[@]:1}")

source "$root/scripts/mutant-worktree.sh"

found=0
for name in "${names[@]}"; do
    log="$work/$name.log"
    reset_mutant_tree
    if ! git -C "$tree" apply "$root/Verification/simulation-mutants/$name.patch" >"$log" 2>&1; then
        echo "mutant $name: patch does not apply to HEAD (see $log)"
        continue
    fi
    if ! "${build[@]}" >>"$log" 2>&1; then
        echo "mutant $name: build failed (see $log)"
        continue
    fi
    SERIAL_SIMULATION_HUNT="$name" SERIAL_SIMULATION_HUNT_LIMIT="$limit" \
        "$scratch/debug/swift-serial-runtimePackageTests.xctest" --testing-library swift-testing \
        --filter 'SimulationSweepTests/theMutantsScenarioFindsIt' >>"$log" 2>&1 || true
    line="$(grep -a "^mutant $name: " "$log" | tail -1 || true)"
    if [ -z "$line" ]; then
        echo "mutant $name: NOT found (no result: the run crashed or hung; see $log)"
        continue
    fi
    echo "$line"
    if [[ "$line" == *": found after "*"replayed identical 10/10" ]]; then found=$((found + 1)); fi
done
echo "${#names[@]} mutants, $found found"
[ "$found" -eq "${#names[@]}" ]
