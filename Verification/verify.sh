#!/usr/bin/env bash
# Model-checks SerialQueue's hand-off protocol (Verification/queue.pml) and the pooled mode
# (Verification/pool.pml: queues sharing a WorkerPool's threads) with spin.
#
#  1. The model of the real protocol, for each way a queue's life ends (shutdown(.drain),
#     shutdown(.cancelPending), release, never): every assertion and no invalid end state
#     (exhaustive safety search), then the LTL properties under weak fairness (everyAcceptedItemRuns
#     only where no shutdown implies it); the same for the bounded queue (-DBOUNDED) and with a
#     stall watchdog (-DWATCHDOG), on fewer endings; then the pooled mode's model for each
#     ending, in three instances (the default one; -DNESTED: work on a pool thread calls
#     another queue of the pool; -DNESTED -DJOB: it also enqueues a task job), and a pool of 3
#     threads (-DNESTED -DJOB -DTHREE: a watcher steals beside an idle thread). All must pass.
#  2. Reachability probes: each scenario the properties depend on must actually happen in the
#     model (a property that holds because its scenario is unreachable proves nothing).
#  3. Mutants: each deliberate bug must be rejected with a counterexample, on the property it
#     targets alone. A mutant that passes fails this script.
#
# pool.pml models the pool of branch pool32 (30e2188) with hop39's bounded work conservation: a
# `next` slot and a lock-free own run queue per pool thread, the pool's run queue under its mutex,
# Dekker's hand-overs on `freeCount` (a push, a thread becoming free) and `watchingCount` (a `next`
# fill, a watcher leaving), steals of own run queues, a watcher that takes a `next` queue after the
# patience, the blocking wrapper's drain, the hop limit's requeue (README, "The pooled mode").
# Time: 601 s wall (137 checks; their own times add up to 1,196 s, user+sys 551 s) on this 2-core
# machine with JOBS=2, load average 4.5-5.7, 2026-11-29 (557 s for 127 checks on 2026-11-26, at
# load 1-3.5; the 3-thread instance's 4 checks take 113 s of check time of the 137, 42 s when
# run alone one at a time; README, "State counts"); the pool's probes share one pan per configuration
# (PROBE_RUNTIME, flock; without flock each probe compiles its own).
#
# Installs nothing: needs spin (Debian package `spin`) and gcc on PATH; pool.pml's pans are
# compiled with clang when it is on PATH (the Swift toolchain's: at -O0 it compiles that pan.c in
# 3-4 s where gcc takes about 10, and most checks are short searches).
# Environment: CHECK_TIMEOUT (seconds per check, default 900: a guard against a runaway search,
# not a speed check; the longest search takes about 150-300 s on a 2-core machine busy with builds), PAN_MEMORY (MB per check, default
# 3072), POOL_CC (pool.pml's pan compiler), KEEP_WORK=1 keeps the work folder (pan sources, outputs, counterexample trails), ONLY=REGEX
# runs only the checks whose label matches (while editing the model; CI runs them all), JOBS
# searches at once (default: one per core; each pan is single-threaded).
# queue.pml: safety runs allow any number of spurious wake-ups, liveness runs one (-DSPURIOUS=n to
# change); pool.pml: any number in both (README, "The pooled mode", "Assumptions").
# Prints one line per check and a summary; exits non-zero if any check failed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
model="$here/queue.pml"
CHECK_TIMEOUT="${CHECK_TIMEOUT:-900}"
JOBS="${JOBS:-$(nproc)}"
PAN_MEMORY="${PAN_MEMORY:-3072}"
# pan's C compiler: gcc, except for pool.pml (below). clang -O0 compiles pool.pml's pan.c in 3-4 s
# where gcc -O0 takes about 10 s, and its pan searches about 13 % slower: a gain for all but the
# longest searches there. For queue.pml's smaller pan.c gcc takes 2 s and searches faster.
POOL_CC="${POOL_CC:-$(command -v clang || echo gcc)}"

for tool in spin gcc timeout; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "verify.sh: '$tool' not found (spin: apt-get install -y spin)" >&2
        exit 2
    fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/serial-verify.XXXXXX")"
if [[ "${KEEP_WORK:-0}" == 1 ]]; then
    echo "work folder: $work"
else
    trap 'rm -rf "$work"' EXIT
fi

# What pan prints when a search did not cover the state space for want of memory or depth (a
# search that stops at its first error also says "Search not completed": a failure only when
# the check expects a pass).
incomplete='out of memory|reached -DMEMLIM bound|max search depth too small|VECTORSZ too small'
passed=0
failed=0
count=0
started=$SECONDS

# check KIND EXPECT LABEL DEFINES...
#   KIND    safety   assertions and invalid end states (pan -DSAFETY)
#           asserts  assertions only (invalid end states ignored: pan -E)
#           deadlock invalid end states only (assertions ignored: pan -A)
#           ltl:NAME the LTL property NAME, acceptance cycles under weak fairness (pan -a -f)
#   EXPECT  pass, or an extended regex the failure report must match (then a trail must exist)
check() {
    local label="$3"
    if [[ -n "${ONLY:-}" ]] && ! grep -qE -- "$ONLY" <<<"$label"; then return 0; fi
    count=$((count + 1))
    local dir="$work/$count"
    mkdir -p "$dir"
    # At most JOBS searches at once (each is one single-threaded pan); lines print in order.
    while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; flush; done
    run_check "$dir" "$@" >"$dir/line.tmp" 2>&1 && mv "$dir/line.tmp" "$dir/line" &
    entries+=("C|$dir")
    flush
}

# Prints the entries (section headers and check lines) in order, up to the first check still running.
entries=()
printed=0
flush() {
    while ((printed < ${#entries[@]})); do
        local entry="${entries[$printed]}"
        if [[ "$entry" == H\|* ]]; then
            printf '%s\n' "${entry#H|}"
        else
            [[ -f "${entry#C|}/line" ]] || return 0
            cat "${entry#C|}/line"
        fi
        printed=$((printed + 1))
    done
}

# A section header, printed in order with the check lines.
section() {
    entries+=("H|$1")
    flush
}

# run_check DIR KIND EXPECT LABEL DEFINES...: one search; prints its line and writes its verdict.
run_check() {
    local dir="$1" kind="$2" expect="$3" label="$4"
    shift 4
    local file="${MODEL:-$model}"
    local name
    name="$(basename "$file")"
    cp "$file" "$dir/$name"
    local t0=$SECONDS
    local cc_flags=(-DMEMLIM="$PAN_MEMORY" -DVECTORSZ=256 -w ${EXTRA_CC:-}) pan_flags=(-m300000)
    local spin_flags=("$@")
    # gcc -O2 takes about 4 s of CPU per queue.pml pan and saves about a third of a search's time:
    # worth it only for the longest search (the 3-producer run passes -O2 in EXTRA_CC, which comes
    # later, and is compiled with gcc).
    cc_flags=(-O0 "${cc_flags[@]}")
    local cc="${PAN_CC:-gcc}"
    case "$kind" in
        # Safety holds for any number of spurious wake-ups; liveness assumes finitely many
        # (infinitely many can starve a thread of the mutex: README, "Spurious wake-ups").
        safety) cc_flags+=(-DSAFETY -DNOCLAIM); spin_flags+=(-DSPURIOUS_UNBOUNDED) ;;
        asserts) cc_flags+=(-DSAFETY -DNOCLAIM); pan_flags+=(-E); spin_flags+=(-DSPURIOUS_UNBOUNDED) ;;
        deadlock) cc_flags+=(-DSAFETY -DNOCLAIM); pan_flags+=(-A); spin_flags+=(-DSPURIOUS_UNBOUNDED) ;;
        ltl:*)
            pan_flags+=(-a -f -N "${kind#ltl:}")
            # A mutant aimed at liveness must fail on liveness, not on an assertion or an end state.
            if [[ "$expect" != pass ]]; then pan_flags+=(-A -E); fi
            ;;
        *) echo "verify.sh: unknown check kind $kind" >&2; exit 2 ;;
    esac
    local verdict detail
    # SHARED_PAN=1 (with flock): one pan per configuration, built by the first check that needs it
    # and run by the others (the probes of pool.pml read their number from PAN_ENV: PROBE=k).
    local build="$dir"
    if [[ "${SHARED_PAN:-0}" == 1 ]] && command -v flock >/dev/null 2>&1; then
        build="$work/shared-$(printf '%s ' "$name" "$cc" "${spin_flags[@]}" "${cc_flags[@]}" | md5sum | cut -c1-16)"
        mkdir -p "$build"
        exec 9>"$build.lock"
        flock 9
        [[ -f "$build/$name" ]] || cp "$file" "$build/$name"
    fi
    if [[ ! -x "$build/pan" ]] && ! (cd "$build" && spin -a "${spin_flags[@]}" "$name" >spin.out 2>&1); then
        verdict=FAIL
        detail="spin -a failed: $(tail -1 "$build/spin.out")"
    elif [[ ! -x "$build/pan" ]] && ! (cd "$build" && "$cc" "${cc_flags[@]}" -o pan pan.c >cc.out 2>&1); then
        verdict=FAIL
        detail="$(basename "$cc") failed: $(head -1 "$build/cc.out")"
    else
        [[ "$build" == "$dir" ]] || { exec 9>&-; ln -sf "$build/pan" "$dir/pan"; }
        local status=0
        (cd "$dir" && env ${PAN_ENV:-} timeout "$CHECK_TIMEOUT" ./pan "${pan_flags[@]}" >pan.out 2>&1) || status=$?
        local out="$dir/pan.out"
        local states
        states="$(grep -Eo '^ *[0-9.e+]+ states, stored' "$out" | grep -Eo '[0-9.e+]+' | head -1 || true)"
        if [[ $status -eq 124 ]]; then
            verdict=FAIL
            detail="timed out after ${CHECK_TIMEOUT}s"
        elif grep -qE "$incomplete" "$out" || { [[ "$expect" == pass ]] && grep -q 'Search not completed' "$out"; }; then
            # pan stops at -DMEMLIM with "errors: 0" and only a warning: a truncated search proves nothing.
            verdict=FAIL
            detail="search incomplete: $(grep -E "$incomplete" "$out" | head -1)"
        elif [[ "$expect" == pass ]]; then
            if grep -q 'errors: 0' "$out" && ! grep -q '^pan:1:' "$out"; then
                verdict=PASS
                detail="verified, ${states:-?} states"
            else
                verdict=FAIL
                detail="$(grep -m1 '^pan:1:' "$out" || echo 'no verdict from pan')"
                [[ -f "$dir/$name.trail" ]] && detail+=" (trail: $dir/$name.trail; keep it with KEEP_WORK=1)"
            fi
        else
            local report
            report="$(grep -m1 '^pan:1:' "$out" || true)"
            if [[ -n "$report" ]] && grep -qE "$expect" <<<"$report" && [[ -f "$dir/$name.trail" ]]; then
                verdict=PASS
                local steps
                steps="$(grep -Eo 'at depth [0-9]+' <<<"$report" | grep -Eo '[0-9]+' || echo '?')"
                if [[ "$label" == reach* || "$label" == "pool reach"* ]]; then
                    detail="reached (witness of ${steps} steps)"
                else
                    detail="rejected: ${report#pan:1: } -> counterexample of ${steps} steps"
                fi
            elif [[ -n "$report" ]]; then
                verdict=FAIL
                detail="rejected for another reason than expected (/$expect/): $report"
            else
                verdict=FAIL
                detail="NOT rejected: spin verified it (${states:-?} states)"
            fi
        fi
    fi
    echo "$verdict" >"$dir/verdict"
    printf '%-4s %-66s %s (%ds)\n' "$verdict" "$label" "$detail" $((SECONDS - t0))
}

section "== spin $(spin -V | head -1 | awk '{print $3}'): the model of the real protocol (2 producers, worker, controller)"
# everyAcceptedItemRuns only where no shutdown ends the run: with a shutdown or a release, it
# follows from the safety run (every accepted item is settled when the call returns: `settled`)
# and everyCallReturns (the call returns). RELEASE keeps it as a cheap cross-check.
for end in DRAIN CANCEL RELEASE NONE; do
    check safety pass "real/$end: assertions, no invalid end state (late handler too)" -DEND_$end -DCHECK_ALL -DLATE_HANDLER
    if [[ $end == RELEASE || $end == NONE ]]; then
        check ltl:everyAcceptedItemRuns pass "real/$end: LTL everyAcceptedItemRuns (weak fairness)" -DEND_$end -DCHECK_ALL
    fi
    check ltl:everyCallReturns pass "real/$end: LTL everyCallReturns (weak fairness)" -DEND_$end -DCHECK_ALL
done

section "== the real protocol with a third producer (P2: sync 5), safety only, COLLAPSE compression"
EXTRA_CC='-DCOLLAPSE -O2' check safety pass "real/RELEASE, 3 producers: assertions, no invalid end state" \
    -DEND_RELEASE -DTHREE_PRODUCERS -DCHECK_ALL

section "== the bounded queue (maximumQueued = 1; P0: async 1, async 2; P1: sync 3, async 4)"
for end in DRAIN CANCEL RELEASE NONE; do
    check safety pass "bounded/$end: assertions, no invalid end state" -DBOUNDED -DEND_$end -DCHECK_ALL
done
check ltl:everyAcceptedItemRuns pass "bounded/NONE: LTL everyAcceptedItemRuns (weak fairness)" -DBOUNDED -DEND_NONE -DCHECK_ALL
check ltl:everyCallReturns pass "bounded/NONE: LTL everyCallReturns (weak fairness)" -DBOUNDED -DEND_NONE -DCHECK_ALL

section "== a stall watchdog watches the queue (P0: async 1; P1: sync 3; the watchdog looks twice)"
for end in DRAIN CANCEL RELEASE NONE; do
    check safety pass "watchdog/$end: assertions, no invalid end state" -DWATCHDOG -DEND_$end -DCHECK_ALL
done
check ltl:everyCallReturns pass "watchdog/NONE: LTL everyCallReturns (weak fairness)" -DWATCHDOG -DEND_NONE -DCHECK_ALL

section "== reachability: each scenario happens in the model"
probe() {  # number, configuration, description
    check asserts "assertion violated \\($1!=$1\\)" "reach $1: $3" -DEND_$2 -DPROBE="$1"
}
probe 1 DRAIN "a sync enters an idle queue through the door"
probe 2 DRAIN "a lock holder records a door-entered body as owner"
probe 3 DRAIN "a door-entered body leaves through the lock"
probe 4 DRAIN "the worker hands a waiting sync caller its turn"
probe 5 DRAIN "work arriving nudges a spinning worker"
probe 6 DRAIN "the worker's condition is signalled"
probe 7 DRAIN "a spurious wake-up"
probe 8 DRAIN "suspend interrupts a batch with 2 items left"
probe 9 CANCEL "shutdown(.cancelPending) drops async work"
probe 10 DRAIN "shutdown while a sync caller waits for its turn"
probe 11 DRAIN "shutdown while a door-entered body runs"
probe 12 DRAIN "a sync call after shutdown is rejected"
probe 13 DRAIN "the worker takes a batch of 2 or more"
probe 14 DRAIN "the worker exits"
probe 15 DRAIN "a sync enters through the door while the worker spins"
probe 16 DRAIN "a sync takes the idle queue under the lock"
probe 17 CANCEL "shutdown(.cancelPending) interrupts a batch"
probe 18 DRAIN "the worker runs the shutdown handlers it kept"
probe 26 DRAIN "a returning sync body passes the queue to the caller next in line"
check asserts "assertion violated \\(19!=19\\)" "reach 19: a handler registered after they fired runs at once" \
    -DEND_DRAIN -DLATE_HANDLER -DPROBE=19
bprobe() {  # number, configuration, description (the bounded queue)
    check asserts "assertion violated \\($1!=$1\\)" "reach $1: $3" -DBOUNDED -DEND_$2 -DPROBE="$1"
}
bprobe 20 NONE "a producer waits for room"
bprobe 21 NONE "a producer that waited for room enqueues"
bprobe 22 DRAIN "a producer that waited for room finds the queue shut down"
bprobe 23 NONE "the worker broadcasts room after taking a batch"
wprobe() {  # number, configuration, description (with the watchdog)
    check asserts "assertion violated \\($1!=$1\\)" "reach $1: $3" -DWATCHDOG -DEND_$2 -DPROBE="$1"
}
wprobe 24 NONE "a body starts while the watchdog sleeps"
wprobe 25 NONE "the queue wakes the sleeping watchdog"

section "== mutants: each must be rejected, with a counterexample, on the property it targets"
mutant() {  # name, kind, expected report, configuration, property flag, description
    check "$2" "$3" "mutant $1 (${2#ltl:}): $6" -DMUTANT_"$1" -DEND_"$4" ${5:+-D$5}
}
deadlock='invalid end state'
cycle='acceptance cycle'
mutant LEAVE_NO_WAKE deadlock "$deadlock" DRAIN "" "sync return does not wake the worker"
mutant LEAVE_BLINDLY deadlock "$deadlock" DRAIN "" "door leave skips its re-check"
mutant LEAVE_NO_WAKE ltl:everyCallReturns "$cycle" DRAIN "" "sync return does not wake the worker"
mutant SPIN_THEN_SLEEP ltl:everyAcceptedItemRuns "$cycle" NONE "" "sleeps after spinning, FIFO unseen"
mutant WAKE_BEFORE_APPEND ltl:everyAcceptedItemRuns "$cycle" NONE "" "wake decided before publishing"
mutant CLOSE_IGNORES_HELD asserts 'running==0' DRAIN CHECK_EXCLUSION "lock holder ignores a held door"
mutant TURN_WAIT_IF asserts 'running==0' DRAIN CHECK_EXCLUSION "turn wait is not a loop"
mutant UNRUN_TO_BACK asserts 'seq\[id\]>lastSeq' DRAIN CHECK_ORDER "interrupted batch goes to the back"
mutant IDLE_IGNORES_FIFO asserts 'seq\[id\]>lastSeq' DRAIN CHECK_ORDER "door opens with work queued"
mutant BATCH_COPY asserts 'st\[id\]==1' DRAIN CHECK_ONCE "batch taken without emptying FIFO"
mutant EXIT_WHILE_OWNED asserts 'settled' DRAIN CHECK_NOTHING_LOST "worker exits while a sync body runs"
mutant CANCEL_DROPS_SYNC asserts 'droppable' CANCEL CHECK_NOTHING_LOST "cancelPending drops sync turns"
mutant DROP_UNCOUNTED asserts 'reported' CANCEL CHECK_NOTHING_LOST "a dropped item is not counted"
mutant KEEP_WAKE_PENDING asserts 'wakePending' DRAIN CHECK_CODE_INVARIANTS "worker never clears wakePending"
mutant EXIT_WITHOUT_HANDLERS asserts 'handled' DRAIN CHECK_HANDLERS "worker exits without running the handlers"
mutant HANDLERS_IN_SHUTDOWN asserts 'drained' DRAIN CHECK_HANDLERS "shutdown runs the handlers before the drain"
mutant PASS_AHEAD_OF_BATCH asserts 'seq\[id\]>lastSeq' DRAIN CHECK_ORDER "sync body passes on ahead of the worker's batch"
mutant PASS_NO_SIGNAL deadlock "$deadlock" DRAIN "" "sync body passes on without the signal"
bmutant() {  # as mutant, on the bounded queue
    check "$2" "$3" "mutant $1 (${2#ltl:}): $6" -DBOUNDED -DMUTANT_"$1" -DEND_"$4" ${5:+-D$5}
}
bmutant ROOM_WAIT_IF asserts 'withinBound' NONE CHECK_BOUND "room wait is not a loop"
bmutant ROOM_CHECK_BEFORE_WAIT asserts 'accepting' DRAIN CHECK_BOUND "shut-down check only before the room wait"
bmutant ROOM_WAKE_KEEPS_DOOR asserts 'seq\[id\]>lastSeq' NONE CHECK_ORDER "room waiter wakes without closing the door"
bmutant ROOM_NO_WORKER_BROADCAST deadlock "$deadlock" NONE "" "worker takes a batch without waking room waiters"
bmutant ROOM_NO_WORKER_BROADCAST ltl:everyCallReturns "$cycle" NONE "" "worker takes a batch without waking room waiters"
wmutant() {  # as mutant, with the watchdog
    check "$2" "$3" "mutant $1 (${2#ltl:}): $6" -DWATCHDOG -DMUTANT_"$1" -DEND_"$4" ${5:+-D$5}
}
wmutant DOOR_IGNORES_WATCHDOG asserts 'watched' NONE CHECK_WATCHDOG "door opens while a watchdog is armed"
wmutant LOOK_KEEPS_DOOR asserts 'watched' NONE CHECK_WATCHDOG "watchdog's look takes the mutex without closing the door"
bmutant ROOM_SHUTDOWN_NO_BROADCAST deadlock "$deadlock" CANCEL "" "shutdown does not wake room waiters"

# ---------------------------------------------------------------------------------------------
# The pooled mode (pool.pml). Pan needs NFAIR=3 for weak fairness over its 8 processes. All at
# -O0 (gcc -O2 of this pan.c takes about 90 s, clang -O2 over 10 minutes: more than either saves).
# POOL_CC: clang when on PATH (above).
pcheck() {  # as check, on pool.pml
    MODEL="$here/pool.pml" PAN_CC="$POOL_CC" EXTRA_CC="-DNFAIR=3 ${PCC:-}" check "$@"
}
section "== the pooled mode: queues A and B on a pool of 2 threads (+ a stand-in slot), each with a next slot and its own run queue"
section "   (P0: A.async 1, B.sync 2; P1: A.sync 3, A.async 4; the controller suspends A, then per ending)"
pcheck safety pass "pool/NONE: assertions, no invalid end state" -DEND_NONE -DCHECK_ALL
pcheck safety pass "pool/DRAIN (A only): assertions, no invalid end state" -DEND_DRAIN -DCHECK_ALL
# END_CANCEL's safety run is left out to keep the run in bounds: README, "The pooled mode",
# "State counts"; CANCEL_DROPS_SYNC below runs END_CANCEL.
pcheck safety pass "pool/POOL (no A.async 4): assertions, no invalid end state" -DEND_POOL -DCHECK_ALL
pcheck ltl:everyAcceptedItemRuns pass "pool/NONE (no A.async 4): LTL everyAcceptedItemRuns (weak fairness)" \
    -DEND_NONE -DSMALL -DCHECK_ALL
section "== the pooled mode, nested: item 1's body (on a pool thread) makes B.async 5, B.sync 6; P1: B.sync 2"
# The nested safety search (17 million states, over 4 GB uncompressed) fits in PAN_MEMORY only
# compressed (1.1 GB), and takes about 150 s of CPU: a longer timeout. Its END_POOL twin (18.5
# million states, 150 s, passing) is left out to keep the whole run within CI's budget: the
# pool's shutdown is checked on the default instance (README, "State counts").
CHECK_TIMEOUT=$((2 * CHECK_TIMEOUT)) PCC="-DCOLLAPSE" pcheck safety pass \
    "pool-nested/NONE: assertions, no invalid end state (COLLAPSE)" -DNESTED -DEND_NONE -DCHECK_ALL
pcheck ltl:everyAcceptedItemRuns pass "pool-nested/NONE (no P1): LTL everyAcceptedItemRuns (weak fairness)" \
    -DNESTED -DEND_NONE -DSMALL -DCHECK_ALL
pcheck ltl:everyCallReturns pass "pool-nested/NONE (no P1): LTL everyCallReturns (weak fairness)" \
    -DNESTED -DEND_NONE -DSMALL -DCHECK_ALL
section "== the pooled mode, nested with a task job: item 1's body makes B.async 5, enqueues job J, makes B.sync 6 (no P1)"
pcheck safety pass "pool-job/NONE: assertions, no invalid end state" -DNESTED -DJOB -DEND_NONE -DSMALL -DCHECK_ALL
pcheck ltl:everyAcceptedItemRuns pass "pool-job/NONE: LTL everyAcceptedItemRuns (weak fairness)" \
    -DNESTED -DJOB -DEND_NONE -DSMALL -DCHECK_ALL
section "== the pooled mode, an endless item: item 1's body makes B.async 5 (into its next slot), then never ends (no P1)"
pcheck ltl:nextTakenDuringEndlessItem pass "pool-endless/NONE: LTL nextTakenDuringEndlessItem (weak fairness)" \
    -DNESTED -DENDLESS -DEND_NONE -DSMALL -DCHECK_ALL
section "== the pooled mode, 3 threads (T2 in slot 2, no stand-in): item 1's body makes B.async 5, enqueues job J (no B.sync 6, no P1)"
# Only with SMALL: with P1's B.sync 2 the safety search takes 43.6 million states (COLLAPSE, 2.8 GB,
# 145 s of pan), beyond CI's budget (README, "State counts").
pcheck safety pass "pool-three/NONE: assertions, no invalid end state" -DNESTED -DJOB -DTHREE -DEND_NONE -DSMALL -DCHECK_ALL
pcheck ltl:everyAcceptedItemRuns pass "pool-three/NONE: LTL everyAcceptedItemRuns (weak fairness)" \
    -DNESTED -DJOB -DTHREE -DEND_NONE -DSMALL -DCHECK_ALL

section "== the pooled mode: reachability (what the pooled mode adds; the queue's own scenarios are probed above)"
pprobe() {  # number, switches, description: one pan per set of switches (PROBE_RUNTIME)
    PAN_ENV="PROBE=$1" SHARED_PAN=1 pcheck asserts "assertion violated \\($1!=$1\\)" "pool reach $1: $3" $2 -DPROBE_RUNTIME
}
pprobe 1 "-DNESTED -DEND_NONE" "work on a pool thread makes a queue runnable into its next slot"
pprobe 2 "-DNESTED -DEND_NONE" "a stand-in thread is started for a blocked pool thread"
pprobe 4 "-DEND_NONE" "a turn ends with work left: the queue goes back to the run queue"
pprobe 6 "-DEND_NONE" "an enqueue wakes nobody: a spinning thread will look"
pprobe 7 "-DEND_NONE" "an enqueue wakes an idle pool thread"
pprobe 8 "-DEND_NONE" "a sync leave puts the handed-over queue back in the run queue"
pprobe 14 "-DEND_NONE" "suspend interrupts a turn's batch"
pprobe 15 "-DNESTED -DEND_NONE" "a surplus thread retires after the blocked one is back"
pprobe 16 "-DEND_POOL" "the pool's threads leave at its shutdown"
pprobe 12 "-DNESTED -DEND_NONE" "a blocking pool thread moves its next queue to the run queue"
pprobe 17 "-DNESTED -DEND_NONE" "a watcher takes another thread's next queue after the patience"
pprobe 18 "-DNESTED -DEND_NONE" "a next fill while a thread is free and none watches wakes an idle one to watch"
pprobe 19 "-DNESTED -DEND_NONE" "a next fill while a thread watches wakes nobody"
pprobe 20 "-DNESTED -DEND_NONE" "a hop: the next queue runs on the same thread"
pprobe 21 "-DNESTED -DEND_NONE" "a hop chain ends early: due delayed work waits at the run queue's head"
pprobe 40 "-DNESTED -DEND_NONE" "a hop chain at its limit: the next queue goes to the run queue's tail (requeue)"
pprobe 41 "-DNESTED -DEND_NONE" "a hop chain at its limit: the next queue is pushed to the own run queue (requeue)"
pprobe 30 "-DEND_NONE" "a turn's re-queue goes to the thread's own run queue (pushLocal)"
pprobe 39 "-DEND_NONE" "a turn's re-queue goes to the run queue's tail (runnableHint > 0)"
pprobe 31 "-DEND_NONE" "a thread became free between a push's two reads of freeCount: it is woken"
pprobe 32 "-DEND_NONE" "the same with the free thread spinning: the notice, nobody to wake"
pprobe 38 "-DEND_NONE" "a thread takes its own run queue's head without the lock"
pprobe 36 "-DEND_NONE" "a look under the lock takes the thread's own run queue's head"
pprobe 37 "-DEND_NONE" "a thread out of work steals from another thread's own run queue"
pprobe 34 "-DNESTED -DJOB -DEND_NONE -DSMALL" "a blocking pool thread moves its own run queue (the job) to the run queue"
pprobe 43 "-DNESTED -DEND_NONE" "a watcher that saw only turnover dozes"
pprobe 44 "-DNESTED -DEND_NONE" "a doze's time passes: the dozer takes itself off the idle stack and looks"
pprobe 45 "-DNESTED -DJOB -DTHREE -DEND_NONE -DSMALL" "a watcher steals a next queue while run-queue work waits and a thread is idle"

section "== the pooled mode: mutants"
pmutant() {  # name, kind, expected report, switches, property flag, description
    pcheck "$2" "$3" "pool mutant $1 (${2#ltl:}): $6" -DMUTANT_"$1" $4 ${5:+-D$5}
}
pmutant REQUEUE_BEFORE_FINISH asserts 'oneThread' "-DEND_NONE -DBATCH_LIMIT=1" CHECK_ONE_THREAD "requeued before the turn ended"
pmutant WAKE_IGNORES_PENDING asserts 'queuedOnce' "-DEND_NONE" CHECK_POOL "scheduled again while scheduled"
pmutant SPIN_NO_RECHECK asserts 'notLost' "-DEND_NONE" CHECK_POOL "sleeps after spinning, run queue unseen"
pmutant SPIN_NO_RECHECK ltl:everyAcceptedItemRuns "$cycle" "-DNESTED -DEND_NONE" "" "sleeps after spinning, run queue unseen"
pmutant PRIVATE_NEXT asserts 'conserving' "-DNESTED -DEND_NONE" CHECK_WORK_CONSERVING "the first version: a private next slot, never published nor stolen"
pmutant NO_STEAL asserts 'conserving' "-DNESTED -DEND_NONE" CHECK_WORK_CONSERVING "a thread out of work neither watches nor takes next queues"
pmutant NEVER_STEAL ltl:nextTakenDuringEndlessItem "$cycle" "-DNESTED -DENDLESS -DEND_NONE -DSMALL" "" "a watcher never takes a next queue, however long it waits"
pmutant STEAL_EARLY asserts 'seenNext' "-DNESTED -DEND_NONE" CHECK_LOCALITY "a free thread takes a next queue before its patience"
pmutant CHECK_BEFORE_FILL asserts 'conserving' "-DNESTED -DEND_NONE" CHECK_WORK_CONSERVING "the filler reads freeCount before it stores next"
pmutant NEXT_KEPT_WHILE_BLOCKING asserts 'notLost' "-DNESTED -DEND_NONE" CHECK_POOL "blocks with a queue in its next slot"
pmutant LOCAL_NO_RECHECK asserts 'conserving' "-DEND_NONE" CHECK_WORK_CONSERVING "a push to the own run queue does not read freeCount again"
pmutant NOTICE_NO_WAKE asserts 'conserving' "-DEND_NONE" CHECK_WORK_CONSERVING "a push that sees a thread became free wakes no idle one"
pmutant FREE_AFTER_SCAN asserts 'conserving' "-DEND_NONE" CHECK_WORK_CONSERVING "a thread becoming free adds to freeCount after scanning the rings"
pmutant NO_LOCAL_STEAL asserts 'conserving' "-DEND_NONE" CHECK_WORK_CONSERVING "a thread out of work does not steal from own run queues"
pmutant BLOCK_KEEPS_LOCAL asserts 'notLost' "-DNESTED -DJOB -DEND_NONE -DSMALL" CHECK_POOL "blocks with work in its own run queue"
pmutant NO_STAND_IN asserts 'freeThreads' "-DNESTED -DEND_NONE" CHECK_POOL "no stand-in for a blocked thread"
pmutant LEAVE_NO_REQUEUE deadlock "$deadlock" "-DEND_DRAIN" "" "a sync leave does not re-queue the queue"
pmutant LEAVE_NO_REQUEUE ltl:everyAcceptedItemRuns "$cycle" "-DNESTED -DEND_NONE" "" "a sync leave does not re-queue the queue"
pmutant NO_REQUEUE_AFTER_TURN asserts 'wakePending' "-DEND_NONE" CHECK_CODE_INVARIANTS "a turn with work left puts the queue to sleep"
pmutant NO_REQUEUE_AFTER_TURN ltl:everyAcceptedItemRuns "$cycle" "-DNESTED -DEND_NONE" "" "a turn with work left puts the queue to sleep"
pmutant HANDOFF_FINISHES_TURN asserts 'running\[[a-z]+\]==0' "-DEND_NONE" CHECK_EXCLUSION "the turn goes on after a sync hand-off"
pmutant HANDOFF_REST_TO_BACK asserts 'seq\[id\]>lastSeq' "-DEND_NONE" CHECK_ORDER "a turn's unrun rest goes behind newer work"
pmutant TAKE_COPY asserts 'st\[id\]==1' "-DEND_NONE" CHECK_ONCE "a turn takes its batch without removing it"
pmutant CANCEL_DROPS_SYNC asserts 'droppable' "-DEND_CANCEL" CHECK_NOTHING_LOST "cancelPending drops sync turns"
pmutant POOL_STOP_EARLY asserts 'settled' "-DEND_POOL" CHECK_NOTHING_LOST "pool threads leave before the queues drained"
pmutant STEALER_LEAVES_RUN_QUEUE asserts 'conserving' "-DNESTED -DJOB -DTHREE -DEND_NONE -DSMALL" CHECK_WORK_CONSERVING \
    "a watcher that steals a next queue wakes nobody for the run queue"

wait
flush
for ((index = 1; index <= count; index++)); do
    if [[ "$(cat "$work/$index/verdict" 2>/dev/null)" == PASS ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "== $passed passed, $failed failed ($((SECONDS - started))s, $JOBS at once)"
[[ $failed -eq 0 ]]
