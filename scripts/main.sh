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
sm80_notes=()
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
      # ptxas performance messages are bugs: C7515 (serialized wgmma)
      # comes as an "info" line, printed only under -v, so look at
      # everything -v prints. Spills
      # fail on sm_90a; on sm_80 they are listed: the TMA kernels
      # (load_block + dot) are sm_90 kernels whose sm_80 build (plain loads,
      # mma.sync on their large tiles) is only compiled, not used by the ops.
      msgs=$("$PTXAS" -v -arch="$ptxarch" -warn-spills -warn-lmem-usage "$out" \
               -o "${out%.ptx}.cubin" 2>&1)
      if grep -qE 'C75[0-9][0-9]|Performance' <<<"$msgs" ||
         { [ "$arch" = sm_90 ] && grep -q warning <<<"$msgs"; }; then
        echo "ptxas reports a performance problem in $kernel ($arch):" >&2
        echo "$msgs" >&2
        exit 1
      fi
      if grep -q warning <<<"$msgs"; then
        sm80_notes+=("$kernel ($arch): $(grep -m1 -o 'spill stores.*\|size of stack frame.*' <<<"$msgs")")
      fi
    done
    out="$OUTDIR/$base.$kernel.sm_90.ptx"
    printf '%-44s %6d lines  (ptxas sm_90a, sm_80: ok)\n' "$out" "$(wc -l <"$out")"
    grep -m1 '\.entry' "$out" | sed 's/^/    /'
    grep -m3 -E 'wgmma\.mma_async|cp\.async\.bulk\.tensor|mma\.sync|ld\.global|st\.global|shfl|bar\.sync' "$out" | cut -c1-120 | sed 's/^/    /'
  done
done

if ((${#sm80_notes[@]})); then
  echo
  echo "Spills in sm_80 builds of sm_90 kernels (compiled as a check, not used there):"
  printf '    %s\n' "${sm80_notes[@]}"
fi

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
