#!/usr/bin/env bash
# Builds the integrations package and runs its tests (called by .ci/run).
set -euo pipefail
cd "$(dirname "$0")"
swift build --build-tests
.build/debug/serial-runtime-integrationsPackageTests.xctest --testing-library swift-testing
