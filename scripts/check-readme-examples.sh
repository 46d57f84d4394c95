#!/usr/bin/env bash
# Every ```swift block of README.md and of the doc comments must be identical to a region of a
# compiled file in Examples/ (the SerialExamples test target). Fails naming each block that is not.
set -euo pipefail
exec python3 "$(dirname "$0")/check-readme-examples.py"
