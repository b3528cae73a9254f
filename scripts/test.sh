#!/usr/bin/env bash
# The test command: set up, build, and run every test with ctest.
# GPU tests skip (and ctest reports them as skipped) when there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "${JOBS:-2}")
# A short coverage-guided fuzz campaign of the front end under ASan + UBSan
# (fuzz/README.md): clang-22 install, a ~40 s build, FUZZ_SECONDS of fuzzing
# from the seed corpus and fuzz/regressions. SKIP_FUZZ=1 leaves it out.
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  bash fuzz/run.sh fuzz_frontend "${FUZZ_SECONDS:-60}" 2>&1 | tail -n 12
fi
