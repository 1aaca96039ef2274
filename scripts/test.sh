#!/usr/bin/env bash
# README command 2: build (incrementally) and run the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
cd "${RLX_BUILD_DIR:-$root/build}"
ctest -j "${RLX_JOBS:-2}" --output-on-failure --timeout 600
