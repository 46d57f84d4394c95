#!/usr/bin/env bash
# CI for Integrations/ (the integrations' end-to-end suite, demos and fleet programs): build
# everything, which builds the root package's integration products with every trait enabled (this
# package depends on the root by path with all its traits: the one build of their heavy
# dependencies in CI), run the tests (a Hummingbird server on 127.0.0.1 that the tests start and
# stop; no other traffic), run the demo against loopback, and run the benchmark once, briefly,
# in debug: a smoke test that it works (its figures mean something only in release, see README).
# The PostgreSQL tests and the fleet test start their own cluster in a temporary folder on
# 127.0.0.1 (as user nobody when run as root: initdb refuses root) and stop it; PostgreSQL 15 is
# installed here first if missing; the TLS tests make their certificates with openssl, which
# postgresql-15 brings (through ssl-cert), and start a second cluster that admits TLS only.
# Every step is bounded by `timeout`, so a hang fails the run instead of stalling it.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n== Integrations: %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "PostgreSQL 15 for the coordinator and fleet tests (installed if missing)"
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ -z "${PG_BIN:-}" ]; then
    # No cluster of the package's own: the tests make theirs.
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" >> /etc/postgresql-common/createcluster.conf
    timeout 600 apt-get update
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -o Dpkg::Options::=--force-confold postgresql-15
fi

step "build (debug, tests included; the root package with every trait)"
timeout 1200 swift build --build-tests

step "tests: end to end against the loopback server"
timeout 600 .build/debug/swift-serial-runtime-integrationsPackageTests.xctest --testing-library swift-testing

step "http-demo: the requests scene against the loopback server"
timeout 60 .build/debug/http-demo

step "http-benchmark: --help, a refused option, then a smoke run (debug build; figures not meaningful)"
# swift-argument-parser writes the help (USAGE: ...) and refuses a bad value naming the option.
timeout 30 .build/debug/http-benchmark --help > /tmp/serial-http-benchmark-help.txt
grep -q '^USAGE: http-benchmark' /tmp/serial-http-benchmark-help.txt
if timeout 30 .build/debug/http-benchmark --runs 0 2> /tmp/serial-http-benchmark-refused.txt; then
    echo "http-benchmark accepted --runs 0" >&2
    exit 1
fi
grep -q -- '--runs' /tmp/serial-http-benchmark-refused.txt
timeout 120 .build/debug/http-benchmark --requests 2000 --concurrency 16 --runs 1 | tee /tmp/serial-http-benchmark.log
# The last line is a contract other tools read.
tail -n 1 /tmp/serial-http-benchmark.log | grep -qE '^pipeline/client: [0-9]+(\.[0-9])? %$' \
    || { echo "http-benchmark did not end with 'pipeline/client: <percent> %'" >&2; exit 1; }
# Tokens that expire every second, the lifetime known (issue 40): it ends with the credentials line.
timeout 120 .build/debug/http-benchmark --requests 1000 --concurrency 16 --runs 1 --token-lifetime 1 \
    | tee /tmp/serial-http-benchmark-credentials.log
tail -n 1 /tmp/serial-http-benchmark-credentials.log \
    | grep -qE '^credentials: [0-9]+ expiries, [0-9]+ refreshes, [0-9]+ requests rejected$' \
    || { echo "http-benchmark --token-lifetime did not end with the credentials line" >&2; exit 1; }

step "done"
