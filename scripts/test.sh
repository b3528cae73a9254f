#!/usr/bin/env bash
# The test command: set up, build, and run every test with ctest.
# GPU tests skip (and ctest reports them as skipped) when there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "${JOBS:-2}")
# Short fuzz runs (fuzz/README.md), each FUZZ_SECONDS from the seed corpus
# and fuzz/regressions; a finding fails CI. SKIP_FUZZ=1 leaves them out.
#  - the front end, coverage-guided under ASan + UBSan: clang-22 install, a
#    ~40 s build;
#  - the whole compile (DSL to PTX) of the release library just built: one
#    file compiled with clang (seconds), no second compiler build; it
#    catches crashes, aborts, hangs and runaway memory.
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  bash fuzz/run.sh fuzz_frontend "${FUZZ_SECONDS:-60}" 2>&1 | tail -n 12
  BUILD_DIR=${BUILD_DIR:-build} bash fuzz/run.sh fuzz_compile_release \
    "${FUZZ_SECONDS:-60}" 2>&1 | tail -n 12
fi
