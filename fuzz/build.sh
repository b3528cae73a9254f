#!/usr/bin/env bash
# Builds the fuzz targets in ${FUZZ_BUILD_DIR:-build-fuzz} with clang-22 under
# AddressSanitizer + UndefinedBehaviorSanitizer (sparsetile's code only).
#   bash fuzz/build.sh                  both targets
#   bash fuzz/build.sh fuzz_frontend    one target
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
if ! command -v clang++-22 >/dev/null || [ ! -d /usr/lib/llvm-22/lib/clang/22/lib ]; then
  echo "fuzz: installing clang-22 and its sanitizer runtimes"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang-22 libclang-rt-22-dev >/dev/null
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DSPARSETILE_FUZZ=ON -DSPARSETILE_SANITIZE=address,undefined \
  -DCUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}" >/dev/null
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_frontend fuzz_compile)
ninja -C "$BUILD_DIR" -j "${JOBS:-2}" "${targets[@]}"
