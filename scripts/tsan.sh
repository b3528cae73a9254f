#!/usr/bin/env bash
# Builds the 16-thread JIT test (tests/runtime/JITThreadsTest.cpp) with
# ThreadSanitizer on sparsetile's own code, in ${TSAN_BUILD_DIR:-build-tsan}
# with clang-22, and runs it. Any data race TSan sees fails the run.
# Without a GPU the test does get/inspect (compile, disk cache) and skips the
# launches; on the GPU machine, carry the build folder and run with
# SKIP_BUILD=1 to include them.
#   bash scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan}
[ "${SKIP_BUILD:-0}" = 1 ] ||
  bash scripts/sanitize_build.sh "$BUILD_DIR" thread RuntimeThreadsTests
# halt_on_error: the first race ends the run with a non-zero status.
# tsan.supp lists (and explains) the reports about LLVM's own objects.
# The test makes a fresh cache folder, so every kernel is compiled for real.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
export SPARSETILE_EXAMPLES_DIR=${SPARSETILE_EXAMPLES_DIR:-$PWD/dsl_examples}
"$BUILD_DIR/tests/runtime/RuntimeThreadsTests" --gtest_color=no "$@"
