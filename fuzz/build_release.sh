#!/usr/bin/env bash
# Builds fuzz_compile_release: FuzzCompile.cpp compiled with clang-22 as a
# libFuzzer target and linked against the compiler library of the normal
# release build (${BUILD_DIR:-build}, built by scripts/build.sh; not rebuilt
# here), into ${FUZZ_BUILD_DIR:-build-fuzz}/fuzz/.
#
# What it is for: CI (scripts/test.sh) fuzzes the whole compile for a minute
# without building the compiler a second time under the sanitizers (~20
# minutes on two cores). The library is neither instrumented nor sanitized,
# so libFuzzer gets no coverage from inside the compiler: this is a mutation
# run over the seeds and the dictionary that catches crashes, aborts, hangs
# and runaway memory on the build users get. Coverage-guided, sanitized
# campaigns use fuzz_compile (fuzz/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
OUT=${FUZZ_BUILD_DIR:-build-fuzz}/fuzz
LIB="$BUILD/compiler/libsparsetile_compiler.so"
if [ ! -f "$LIB" ]; then
  echo "fuzz/build_release.sh: $LIB not found: run scripts/build.sh first" >&2
  exit 1
fi
if ! command -v clang++-22 >/dev/null ||
   ! ls /usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz/build_release.sh: installing clang-22 and libclang-rt-22-dev"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang-22 libclang-rt-22-dev >/dev/null
fi
mkdir -p "$OUT"
LIBDIR=$(cd "$(dirname "$LIB")" && pwd)
clang++-22 -std=c++17 -O1 -g -fsanitize=fuzzer -Icompiler/include \
  fuzz/FuzzCompile.cpp "$LIB" -Wl,-rpath,"$LIBDIR" -o "$OUT/fuzz_compile_release"
echo "fuzz/build_release.sh: built $OUT/fuzz_compile_release against $LIB"
