#!/usr/bin/env bash
# CI step: builds with the Simulation trait into .build-sim, runs the SimulationTests target (the
# scheduler's own tests, the scenario tests) and sweeps every catalogued scenario
# (Tests/SimulationTests/ScenarioCatalog.swift) over a fixed number of seeds each. Ends with
#   simulation: S scenarios, N schedules, F failures
# after one line per failed schedule, each with `replay:` and its token (replay it with
# SERIAL_SIMULATION_REPLAY=TOKEN and the scenario's test, or Simulation.replay). Exits non-zero
# on any failure.
#
# SIMULATION_SEEDS (default 1000): seeds per scenario for the catalogue's weight 4; lighter
# entries get a quarter or half of it (see CatalogEntry.seedWeight). SIMULATION_SHARDS (default:
# one per core): processes the sweep is split over.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
seeds="${SIMULATION_SEEDS:-1000}"
swift build --build-tests --traits Simulation --scratch-path "$root/.build-sim" 2>&1 | tail -3
# A simulation runs one thread at a time: the sweep is split over one process per core, each
# taking every scenario's seeds equal to its index modulo the count (SERIAL_SIMULATION_SHARD);
# the first process also runs the rest of SimulationTests. The summary adds the shards up.
shards="${SIMULATION_SHARDS:-$(nproc)}"
binary="$root/.build-sim/debug/swift-serial-runtimePackageTests.xctest"
pids=()
for ((shard = 0; shard < shards; shard++)); do
    filter='^SimulationTests\.'
    [ "$shard" -gt 0 ] && filter='SimulationSweepTests.everyCataloguedScenarioPassesItsSeeds'
    SERIAL_SIMULATION_SEEDS="$seeds" SERIAL_SIMULATION_SHARD="$shard/$shards" "$binary" \
        --testing-library swift-testing --filter "$filter" >"$root/.build-sim/simulation.$shard.log" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
scenarios=0 schedules=0 failures=0
for ((shard = 0; shard < shards; shard++)); do
    log="$root/.build-sim/simulation.$shard.log"
    echo "-- shard $shard/$shards"
    grep -a -E "^simulation: .+ schedules, [0-9]+ failures in " "$log" || true
    grep -a -E "^simulation failure: " "$log" || true
    grep -a -E "(✘|failed after|Test run with)" "$log" | sed 's/\x1b\[[0-9;]*m//g' | tail -20 || true
    line="$(grep -a -E "^simulation: [0-9]+ scenarios, " "$log" | tail -1 || true)"
    if [ -z "$line" ]; then
        echo "simulation: the sweep of shard $shard did not finish (exit $status; see $log)"
        exit 1
    fi
    read -r s n f <<<"$(sed -E 's/^simulation: ([0-9]+) scenarios, ([0-9]+) schedules, ([0-9]+) failures.*/\1 \2 \3/' <<<"$line")"
    scenarios=$s
    schedules=$((schedules + n))
    failures=$((failures + f))
done
echo "simulation: $scenarios scenarios, $schedules schedules, $failures failures"
[ "$status" -eq 0 ] && [ "$failures" -eq 0 ]
