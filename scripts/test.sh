#!/usr/bin/env bash
# The test command: set up, build, and run every test with ctest.
# GPU tests skip (and ctest reports them as skipped) when there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${JOBS:-2}"
