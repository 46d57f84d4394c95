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
# entries get a quarter or half of it (see CatalogEntry.seedWeight).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
seeds="${SIMULATION_SEEDS:-1000}"
swift build --build-tests --traits Simulation --scratch-path "$root/.build-sim" 2>&1 | tail -3
log="$root/.build-sim/simulation.log"
status=0
SERIAL_SIMULATION_SEEDS="$seeds" "$root/.build-sim/debug/swift-serial-runtimePackageTests.xctest" \
    --testing-library swift-testing --filter '^SimulationTests\.' >"$log" 2>&1 || status=$?
grep -a -E "^simulation: .+ schedules, [0-9]+ failures in " "$log" || true
grep -a -E "^simulation failure: " "$log" || true
grep -a -E "(✘|failed after|Test run with)" "$log" | sed 's/\x1b\[[0-9;]*m//g' | tail -20 || true
summary="$(grep -a -E "^simulation: [0-9]+ scenarios, " "$log" | tail -1 || true)"
if [ -z "$summary" ]; then
    echo "simulation: the sweep did not finish (exit $status; see $log)"
    exit 1
fi
echo "$summary"
[ "$status" -eq 0 ]
