#!/usr/bin/env bash
# Builds the fuzz targets in ${FUZZ_BUILD_DIR:-build-fuzz} with clang-22 under
# AddressSanitizer + UndefinedBehaviorSanitizer (sparsetile's code only).
#   bash fuzz/build.sh                  both targets
#   bash fuzz/build.sh fuzz_frontend    one target
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_frontend fuzz_compile)
bash scripts/sanitize_build.sh "${FUZZ_BUILD_DIR:-build-fuzz}" address,undefined \
  -DSPARSETILE_FUZZ=ON "${targets[@]}"
