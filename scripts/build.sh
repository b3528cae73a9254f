#!/usr/bin/env bash
# Configures and builds sparsetile in ${BUILD_DIR:-build} (Release, Ninja).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}" >/dev/null
# MLIR translation units need ~2 GB each: two jobs fit a 2-core, 24 GB box.
ninja -C "$BUILD_DIR" -j "${JOBS:-2}"
