#!/usr/bin/env bash
# Builds the 16-thread JIT test (tests/runtime/JITThreadsTest.cpp) with
# ThreadSanitizer on sparsetile's own code, in ${TSAN_BUILD_DIR:-build-tsan}
# with clang-22, and runs it. Any data race TSan sees fails the run.
#   bash scripts/tsan.sh                  build and run here (no GPU: get and
#                                         inspect from 16 threads, launches
#                                         skipped with the reason)
#   TSAN_PACK=1 bash scripts/tsan.sh      build, then pack the test and its
#                                         TSan compiler library into
#                                         .device/tsan (about 14 MB) for the
#                                         GPU machine, without running
#   bash scripts/tsan.sh                  on the GPU machine, from the
#                                         repository root with .device/tsan
#                                         carried: runs with the launches
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan}
PACKED=.device/tsan
if [ -f "$PACKED/RuntimeThreadsTests" ] && [ ! -d "$BUILD_DIR" ]; then
  # The GPU machine: no clang, no LLVM; unpack the carried library.
  LIB=$(mktemp -d "${TMPDIR:-/tmp}/sparsetile-tsan.XXXXXX")
  trap 'rm -rf "$LIB"' EXIT
  # Packed under its SONAME (libsparsetile_compiler.so.MAJOR), the name
  # the test asks for.
  for packed in "$PACKED"/libsparsetile_compiler.so*.xz; do
    python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' \
      "$packed" "$LIB/$(basename "${packed%.xz}")"
  done
  export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  TEST="$PACKED/RuntimeThreadsTests"
else
  [ "${SKIP_BUILD:-0}" = 1 ] ||
    bash scripts/sanitize_build.sh "$BUILD_DIR" thread RuntimeThreadsTests
  TEST="$BUILD_DIR/tests/runtime/RuntimeThreadsTests"
  if [ "${TSAN_PACK:-0}" = 1 ]; then
    mkdir -p "$PACKED"
    strip --strip-unneeded -o "$PACKED/RuntimeThreadsTests" "$TEST"
    soname=$(readelf -d "$BUILD_DIR/compiler/libsparsetile_compiler.so" |
             sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    rm -f "$PACKED"/libsparsetile_compiler.so*
    strip --strip-unneeded -o "$PACKED/$soname" \
      "$BUILD_DIR/compiler/libsparsetile_compiler.so"
    xz -f -T2 -6 "$PACKED/$soname"
    du -sh "$PACKED"
    exit 0
  fi
fi
# halt_on_error: the first race ends the run with a non-zero status.
# No suppressions: the one report about LLVM's own objects was avoided in
# the code (PTXEmitter.cpp, the PassBuilder's file system).
# The test makes a fresh cache folder, so every kernel is compiled for real.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export SPARSETILE_EXAMPLES_DIR=${SPARSETILE_EXAMPLES_DIR:-$PWD/dsl_examples}
"$TEST" --gtest_color=no "$@"
