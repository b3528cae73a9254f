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
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if ! command -v clang++-22 >/dev/null; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang-22 libclang-rt-22-dev >/dev/null
  fi
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DSPARSETILE_SANITIZE=thread \
    -DCUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}" >/dev/null
  ninja -C "$BUILD_DIR" -j "${JOBS:-2}" RuntimeThreadsTests
fi
# halt_on_error: the first race ends the run with a non-zero status.
# Each compile gets a fresh cache folder, so the run compiles for real.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export SPARSETILE_EXAMPLES_DIR=${SPARSETILE_EXAMPLES_DIR:-$PWD/dsl_examples}
"$BUILD_DIR/tests/runtime/RuntimeThreadsTests" --gtest_color=no "$@"
