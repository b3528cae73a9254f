#!/usr/bin/env bash
# Configures and builds sparsetile targets with clang-22 and sanitizers on
# sparsetile's own code (SPARSETILE_SANITIZE; the LLVM/MLIR archives stay
# uninstrumented), installing clang-22 and its sanitizer runtimes if they are
# missing (idempotent). Used by fuzz/build.sh and scripts/tsan.sh.
#   bash scripts/sanitize_build.sh BUILD_DIR SANITIZERS [-DCMAKE_ARG...] TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:?usage: sanitize_build.sh BUILD_DIR SANITIZERS [-D...] TARGET...}
SANITIZERS=${2:?}
shift 2
cmake_args=() targets=()
for a in "$@"; do
  case "$a" in -D*) cmake_args+=("$a") ;; *) targets+=("$a") ;; esac
done
if ! command -v clang++-22 >/dev/null || ! ls /usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.asan-x86_64.a >/dev/null 2>&1; then
  echo "sanitize_build: installing clang-22 and libclang-rt-22-dev"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang-22 libclang-rt-22-dev >/dev/null
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DSPARSETILE_SANITIZE="$SANITIZERS" -DCUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}" \
  "${cmake_args[@]}" >/dev/null
ninja -C "$BUILD_DIR" -j "${JOBS:-2}" "${targets[@]}"
