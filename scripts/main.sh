#!/usr/bin/env bash
# The main command: set up, build, compile every kernel in dsl_examples/ to
# PTX for sm_90 and sm_80 (checked by ptxas), show where the PTX went with an
# excerpt, and, when a GPU is present, run the examples on it and check them
# against references.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
STC="$BUILD_DIR/compiler/stc"
PTXAS="${CUDA_ROOT:-/usr/local/cuda}/bin/ptxas"
OUTDIR="$BUILD_DIR/examples"
mkdir -p "$OUTDIR"

echo
echo "== Compiling dsl_examples/ =="
for file in dsl_examples/*.tile; do
  base=$(basename "$file" .tile)
  for kernel in $("$STC" "$file" --list | sed 's/(.*//'); do
    for arch in sm_90 sm_80; do
      out="$OUTDIR/$base.$kernel.$arch.ptx"
      # --div16 all: the variant the runtime picks when every integer
      # argument is a multiple of 16 (aligned shapes): 16-byte accesses.
      "$STC" "$file" --kernel "$kernel" --arch "$arch" --div16 all -o "$out"
      # sm_90 compiles to sm_90a (TMA, wgmma): ptxas must be told so.
      ptxarch=$arch
      [ "$arch" = sm_90 ] && ptxarch=sm_90a
      "$PTXAS" -arch="$ptxarch" "$out" -o "${out%.ptx}.cubin"
    done
    out="$OUTDIR/$base.$kernel.sm_90.ptx"
    printf '%-44s %6d lines  (ptxas sm_90a, sm_80: ok)\n' "$out" "$(wc -l <"$out")"
    grep -m1 '\.entry' "$out" | sed 's/^/    /'
    grep -m3 -E 'wgmma\.mma_async|cp\.async\.bulk\.tensor|mma\.sync|ld\.global|st\.global|shfl|bar\.sync' "$out" | cut -c1-120 | sed 's/^/    /'
  done
done

echo
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "== Running the examples on the GPU =="
  "$BUILD_DIR/tests/gpu/DslGpuTests" --gtest_brief=1
  "$BUILD_DIR/tests/ops/sparsetile_ops_tests" --gtest_brief=1
  "$BUILD_DIR/tests/ops/sparsetile_sparse24_tests" --gtest_brief=1
else
  echo "No GPU here: the examples were compiled but not run."
  echo "(scripts/gpu_run.sh runs them, the GPU tests and the benchmarks on a GPU machine.)"
fi
