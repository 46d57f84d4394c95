#!/usr/bin/env python3
"""Runs the demo RUNS times (default 1; `check-demo.py 20` for the issue's 20 out of 20) and
checks that each scene's claims are visible in what it printed. Exits 1 naming the claim and
the run that broke it. Expects a built demo: .build/debug/demo, or DEMO=path."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.environ.get("DEMO", os.path.join(ROOT, ".build", "debug", "demo"))


def claims(out):
    """(claim, holds) pairs for one run's output."""
    yield "SerialQueue: per-producer order", "three steps in its own order: yes" in out
    yield "SerialQueue: sync on the caller's thread", "sync bodies on the caller's thread: yes" in out
    yield "SerialQueue: async on the worker", "async work on the queue's worker: yes" in out

    m = re.search(r"(\d+) answered in time, (\d+) timed out; their late answers came and were dropped: (\d+) "
                  r"\(never started: (\d+)\); outcomes delivered: (\d+)", out)
    yield "Timers: summary line", m is not None
    if m:
        answered, timed_out, dropped, skipped, outcomes = map(int, m.groups())
        yield "Timers: some hosts answer in time", answered >= 1 \
            and sum("finished —" in line for line in out.splitlines() if "2nd caller" not in line) == answered
        host_lines = [line for line in out.splitlines() if "ms  host-" in line and "2nd caller" not in line]
        yield "Timers: some hosts time out", timed_out >= 1 \
            and sum("TIMED OUT" in line for line in host_lines) == timed_out
        yield "Timers: every late answer dropped or never started", dropped + skipped == timed_out
        yield "Timers: one outcome per caller (5 hosts + the joined caller)", outcomes == 6
    yield "Timers: a duplicate key joins", "a second request for host-3 was joined" in out
    yield "Timers: one wake-up for 1,000 far timers, none fired", re.search(
        r"1000 pending, 1 delayed wake-up armed.*fired 0\.", out) is not None

    yield "Countdown: re-registering replaces", "replaced, still 3 countdowns" in out
    yield "Countdown: released receiver freed", "[leaver] deinit" in out
    yield "Countdown: stop flag", "[stopper] sets the stop flag" in out
    yield "Countdown: final tick", "[keeper] done" in out and "[sequence] finished" in out
    yield "Countdown: ticker stops", "countdowns left: 0" in out

    yield "Polling: reaches 100%", "100%   at" in out
    yield "Polling: a busy answer is retried", "server busy, it asks to retry" in out
    yield "Polling: an unchanged answer is shown", "again: unchanged" in out
    m = re.search(r"The (\d+) unchanged answers", out)
    yield "Polling: unchanged answers counted", m is not None and int(m.group(1)) >= 1 \
        and int(m.group(1)) == out.count("again: unchanged")
    yield "Polling: never two queries in flight", "two queries in flight at once: 0 times" in out \
        and "every query started after the previous answer" in out

    yield "Requests: parked on an expired token", "state .redirect: its token expired" in out
    yield "Requests: one refresh, every request completed once", re.search(
        r"12 submitted, 12 completed once each; \d+ sends, 1 refresh,", out) is not None
    yield "Requests: the overnight start refreshes first, nothing rejected", re.search(
        r"4 submitted, 4 completed once each; 0 rejected with 401, 1 refresh before the first send, 4 sends", out
    ) is not None


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    failures = 0
    for run in range(1, runs + 1):
        result = subprocess.run([DEMO], capture_output=True, text=True, timeout=120)
        broken = [claim for claim, holds in claims(result.stdout) if not holds]
        if result.returncode != 0:
            broken.append(f"exit status {result.returncode}")
        if broken:
            failures += 1
            print(f"run {run}: claims not shown: {', '.join(broken)}\n{result.stdout}{result.stderr}", file=sys.stderr)
        elif runs == 1:
            print(result.stdout)
    print(f"demo: {runs - failures} of {runs} runs showed every claim")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
