#!/usr/bin/env bash
# Runs the runtime and GPU tests and the runtime benches ON THE GPU MACHINE,
# from the repository root, with the prebuilt build carried in .device/build
# (made on the build machine by scripts/pack_gpu_build.sh; the GPU machine has
# CUDA 13 at /usr/local/cuda, python3 with torch and triton, but no LLVM/MLIR,
# so nothing is built here).
#
# Usage: bash scripts/gpu_run.sh
#   OUT=/some/dir   where logs go (default /tmp/sparsetile-gpu); everything
#                   is written under it:
#     logs.tar.gz: logs/<test>.log, .xml each test executable's output and
#                                        GoogleTest XML
#     runtime_bench.md                   the C++ runtime bench (markdown)
#     triton_compile.md                  Triton's compile times (markdown)
#     gated_bench.md, torch_glu.md       gated activations: sparsetile, PyTorch
#     sparse24_bench.md, torch_mask.md   transposable 2:4 mask: sparsetile, PyTorch
#     sparsedrop_bench.md, torch_sparsedrop.md
#                                        SparseDrop GEMMs: sparsetile, cuBLAS
#     summary.md                         the table printed last
#   SPARSETILE_GPU_BUILD=.device/build   the carried build
#   SKIP_BENCH=1                         tests only
#   TEST_TIMEOUT=300, BENCH_TIMEOUT=180, TRITON_TIMEOUT=240
#                                        per-executable limits, seconds
#   SPARSETILE_TEST_SEED=N               reproduce a GPU test run's inputs
#
# Environment it sets: LD_LIBRARY_PATH (the carried executables' RPATH points
# at the build machine, so libsparsetile_compiler.so is found through it),
# SPARSETILE_LIBDEVICE (libdevice of the local toolkit), a fresh
# SPARSETILE_CACHE_DIR under /tmp, SPARSETILE_EXAMPLES_DIR=./dsl_examples.
#
# Exit status: 0 when no test failed (skips are fine), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${SPARSETILE_GPU_BUILD:-.device/build}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
OUT_DIR=${OUT:-/tmp/sparsetile-gpu}
mkdir -p "$OUT_DIR/logs"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-180}
TRITON_TIMEOUT=${TRITON_TIMEOUT:-240}

if [ ! -f "$BUILD/tests.txt" ]; then
  echo "gpu_run: no carried build in $BUILD (run scripts/pack_gpu_build.sh on the build machine)" >&2
  exit 2
fi

# The compiler library: carried xz-compressed; unpack it outside $OUT (so it
# does not come back with the logs) and check it against the MANIFEST.
LIBDIR="$BUILD/lib"
if [ ! -f "$LIBDIR/libsparsetile_compiler.so" ]; then
  if [ ! -f "$LIBDIR/libsparsetile_compiler.so.xz" ]; then
    echo "gpu_run: $LIBDIR has no libsparsetile_compiler.so(.xz)" >&2
    exit 2
  fi
  LIBDIR=$(mktemp -d "${TMPDIR:-/tmp}/sparsetile-lib.XXXXXX")
  trap 'rm -rf "$LIBDIR"' EXIT
  if command -v xz >/dev/null; then
    xz -dc "$BUILD/lib/libsparsetile_compiler.so.xz" >"$LIBDIR/libsparsetile_compiler.so"
  else
    python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' \
      "$BUILD/lib/libsparsetile_compiler.so.xz" "$LIBDIR/libsparsetile_compiler.so"
  fi
  want=$(sed -n 's/^compiler-library-sha256: //p' "$BUILD/MANIFEST" 2>/dev/null)
  got=$(sha256sum "$LIBDIR/libsparsetile_compiler.so" | cut -d' ' -f1)
  if [ -n "$want" ] && [ "$want" != "$got" ]; then
    echo "gpu_run: unpacked libsparsetile_compiler.so does not match the MANIFEST" >&2
    exit 2
  fi
fi

export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SPARSETILE_LIBDEVICE=${SPARSETILE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export SPARSETILE_CACHE_DIR="${TMPDIR:-/tmp}/sparsetile-gpu-cache"
rm -rf "$SPARSETILE_CACHE_DIR"
mkdir -p "$SPARSETILE_CACHE_DIR"
export SPARSETILE_EXAMPLES_DIR="$ROOT/dsl_examples"
export TMPDIR=${TMPDIR:-/tmp}

{
  echo "# sparsetile GPU run"
  echo
  sed -n '1,4p' "$BUILD/MANIFEST" 2>/dev/null
  echo "host:     $(uname -n), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu:      /'
  else
    echo "gpu:      nvidia-smi not found"
  fi
  echo "compiler library: $(ldd "$BUILD/bin/stc" 2>&1 | awk '/libsparsetile_compiler/ { print $3 }')"
  echo "libdevice: $SPARSETILE_LIBDEVICE $( [ -f "$SPARSETILE_LIBDEVICE" ] && echo present || echo MISSING)"
} | tee "$OUT_DIR/environment.txt"
echo

# --- Tests: every carried GoogleTest executable, one XML each. ---
SUMMARY="$OUT_DIR/summary.md"
rows=()
any_fail=0
while read -r rel; do
  [ -n "$rel" ] || continue
  name=$(basename "$rel")
  exe="$BUILD/$rel"
  log="$OUT_DIR/logs/$name.log"
  xml="$OUT_DIR/logs/$name.xml"
  rm -f "$xml"
  echo "== $name"
  start=$(date +%s.%N)
  timeout "$TEST_TIMEOUT" "$exe" --gtest_output="xml:$xml" >"$log" 2>&1
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  counts=$(python3 - "$xml" "$OUT_DIR/logs/$name.notes" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 0 0 -"); sys.exit()
p = s = f = 0
failed, reasons = [], {}
for tc in root.iter("testcase"):
    full = tc.get("classname", "") + "." + tc.get("name", "")
    if tc.find("failure") is not None or tc.find("error") is not None:
        f += 1; failed.append(full)
    elif tc.get("result") == "skipped" or tc.find("skipped") is not None or tc.get("status") == "notrun":
        s += 1
        sk = tc.find("skipped")
        msg = (sk.get("message", "") if sk is not None else "").strip()
        msg = msg.splitlines()[-1] if msg else "(no reason given)"
        reasons[msg[:160]] = reasons.get(msg[:160], 0) + 1
    else:
        p += 1
with open(sys.argv[2], "w") as notes:
    for m, n in reasons.items():
        notes.write(f"skipped {n}: {m}\n")
    for t in failed:
        notes.write(f"FAILED: {t}\n")
print(p, s, f, ",".join(failed) or "-")
PY
)
  read -r pass skip fail failed <<<"$counts"
  status=ok
  if [ "$rc" = 124 ]; then status="TIMEOUT (${TEST_TIMEOUT}s)"; any_fail=1
  elif [ "$rc" != 0 ] || [ "$fail" != 0 ]; then status="FAIL (rc $rc)"; any_fail=1
  elif [ ! -s "$xml" ]; then status="NO XML (rc $rc)"; any_fail=1; fi
  [ "$failed" = "-" ] && failed=""
  rows+=("| $name | $pass | $skip | $fail | $secs | $status ${failed:+: $failed} |")
  # Why things were skipped or failed, and the seed of randomized tests.
  { grep -h 'SPARSETILE_TEST_SEED=' "$log" | head -1
    head -12 "$OUT_DIR/logs/$name.notes" 2>/dev/null; } | sed 's/^/   /'
  echo "   $pass passed, $skip skipped, $fail failed, ${secs}s, $status"
done < "$BUILD/tests.txt"

# --- Benches. ---
bench_status="skipped"
triton_status="skipped"
gated_status="skipped"
torch_status="skipped"
sparse24_status="skipped"
torch_mask_status="skipped"
sparsedrop_status="skipped"
torch_sparsedrop_status="skipped"
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  echo
  echo "== runtime_bench"
  timeout "$BENCH_TIMEOUT" "$BUILD/bench/runtime/runtime_bench" --reps 5 \
    "dsl_examples/vector_add.tile:vector_add" \
    "dsl_examples/softmax.tile:softmax" \
    "dsl_examples/swiglu_fwd.tile:swiglu_fwd" \
    >"$OUT_DIR/runtime_bench.md" 2>"$OUT_DIR/logs/runtime_bench.err"
  rc=$?
  bench_status=$([ $rc = 0 ] && echo ok || echo "FAIL (rc $rc)")
  cat "$OUT_DIR/runtime_bench.md"; cat "$OUT_DIR/logs/runtime_bench.err"

  echo "== triton_compile.py"
  timeout "$TRITON_TIMEOUT" python3 bench/runtime/triton_compile.py --reps 3 \
    --budget-s $((TRITON_TIMEOUT - 30)) \
    >"$OUT_DIR/triton_compile.md" 2>"$OUT_DIR/logs/triton_compile.err"
  rc=$?
  case $rc in
    0) triton_status=ok ;;
    3) triton_status="unavailable (no torch/triton/GPU)" ;;
    124) triton_status="TIMEOUT (${TRITON_TIMEOUT}s)" ;;
    *) triton_status="FAIL (rc $rc)" ;;
  esac
  cat "$OUT_DIR/triton_compile.md"; tail -20 "$OUT_DIR/logs/triton_compile.err"

  # Gated activations: sparsetile and PyTorch in the same session, so every
  # figure of the comparison comes from one run.
  echo "== gated_bench"
  timeout "$BENCH_TIMEOUT" "$BUILD/bench/gated/sparsetile_gated_bench" \
    >"$OUT_DIR/gated_bench.md" 2>"$OUT_DIR/logs/gated_bench.err"
  rc=$?
  gated_status=$([ $rc = 0 ] && echo ok || echo "FAIL (rc $rc)")
  cat "$OUT_DIR/gated_bench.md"; cat "$OUT_DIR/logs/gated_bench.err"
  echo "== torch_glu.py"
  PYTHONUNBUFFERED=1 timeout "$TRITON_TIMEOUT" python3 bench/gated/torch_glu.py \
    >"$OUT_DIR/torch_glu.md" 2>"$OUT_DIR/logs/torch_glu.err"
  rc=$?
  torch_status=$([ $rc = 0 ] && echo ok || echo "FAIL (rc $rc)")
  cat "$OUT_DIR/torch_glu.md"; tail -20 "$OUT_DIR/logs/torch_glu.err"

  # Transposable 2:4 mask: sparsetile and the PyTorch brute force, same session.
  echo "== sparse24_bench"
  timeout "$BENCH_TIMEOUT" "$BUILD/bench/sparse24/sparsetile_sparse24_bench" \
    >"$OUT_DIR/sparse24_bench.md" 2>"$OUT_DIR/logs/sparse24_bench.err"
  rc=$?
  sparse24_status=$([ $rc = 0 ] && echo ok || echo "FAIL (rc $rc)")
  cat "$OUT_DIR/sparse24_bench.md"; cat "$OUT_DIR/logs/sparse24_bench.err"
  echo "== torch_mask.py"
  PYTHONUNBUFFERED=1 timeout "$TRITON_TIMEOUT" python3 bench/sparse24/torch_mask.py \
    >"$OUT_DIR/torch_mask.md" 2>"$OUT_DIR/logs/torch_mask.err"
  rc=$?
  torch_mask_status=$([ $rc = 0 ] && echo ok || echo "FAIL (rc $rc)")
  cat "$OUT_DIR/torch_mask.md"; tail -20 "$OUT_DIR/logs/torch_mask.err"

  # SparseDrop block-sparse GEMMs: sparsetile and cuBLAS, same session.
  echo "== sparsedrop_bench"
  timeout "$BENCH_TIMEOUT" "$BUILD/bench/sparsedrop/sparsetile_sparsedrop_bench" \
    >"$OUT_DIR/sparsedrop_bench.md" 2>"$OUT_DIR/logs/sparsedrop_bench.err"
  rc=$?
  sparsedrop_status=$([ $rc = 0 ] && echo ok || echo "FAIL (rc $rc)")
  cat "$OUT_DIR/sparsedrop_bench.md"; cat "$OUT_DIR/logs/sparsedrop_bench.err"
  echo "== torch_ref.py (sparsedrop)"
  PYTHONUNBUFFERED=1 timeout "$TRITON_TIMEOUT" python3 bench/sparsedrop/torch_ref.py \
    >"$OUT_DIR/torch_sparsedrop.md" 2>"$OUT_DIR/logs/torch_sparsedrop.err"
  rc=$?
  torch_sparsedrop_status=$([ $rc = 0 ] && echo ok || echo "FAIL (rc $rc)")
  cat "$OUT_DIR/torch_sparsedrop.md"; tail -20 "$OUT_DIR/logs/torch_sparsedrop.err"
fi

{
  echo "## Summary"
  echo
  echo "| executable | passed | skipped | failed | seconds | status |"
  echo "|---|---:|---:|---:|---:|---|"
  printf '%s\n' "${rows[@]}"
  echo "| runtime_bench | | | | | $bench_status |"
  echo "| triton_compile.py | | | | | $triton_status |"
  echo "| gated_bench | | | | | $gated_status |"
  echo "| torch_glu.py | | | | | $torch_status |"
  echo "| sparse24_bench | | | | | $sparse24_status |"
  echo "| torch_mask.py | | | | | $torch_mask_status |"
  echo "| sparsedrop_bench | | | | | $sparsedrop_status |"
  echo "| sparsedrop torch_ref.py | | | | | $torch_sparsedrop_status |"
  echo
  echo "Logs: $OUT_DIR"
} > "$SUMMARY"
# The device tool brings back at most 8 files: pack the per-test logs.
tar -C "$OUT_DIR" -czf "$OUT_DIR/logs.tar.gz" logs && rm -rf "$OUT_DIR/logs"
echo
cat "$SUMMARY"
exit $any_fail
