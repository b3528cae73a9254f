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
#                  <bench>.json          the SparseDrop and 2:4 benches' rows
#                                        (--json), for bench/plot.py
#     runtime_bench.md                   the C++ runtime bench (markdown)
#     triton_compile.md                  Triton's compile times (markdown)
#     gated_bench.md, torch_glu.md       gated activations: sparsetile, PyTorch
#     sparse24_bench.md, torch_mask.md   transposable 2:4 mask: sparsetile, PyTorch
#     torch_sparse24.md                  2:4 GEMM baselines: cuBLAS, cuSPARSELt
#     layers_bench.md                    the Python layers vs nn.Linear
#     sparsedrop_bench.md, torch_sparsedrop.md
#                                        SparseDrop GEMMs: sparsetile, cuBLAS
#     autotune_bench.md, torch_gemm.md   the autotuned DSL GEMM against its
#                                        fixed tiles, first-launch and
#                                        second-process times; cuBLAS
#     summary.md                         the table printed last
#   SPARSETILE_GPU_BUILD=.device/build   the carried build
#   SKIP_BENCH=1                         tests only
#   RUN_TRAIN=1, RUN_TRAIN_DDP=1         examples/train_gpt.py on one GPU, and
#                                        under torchrun on all of them
#   TRAIN_VARIANT, TRAIN_ARGS            its --variant and other arguments
#   ONLY_TESTS=REGEX, ONLY_BENCH=REGEX   run only the test executables /
#                                        benches whose names match
#   PROFILE=1                            also profile the SparseDrop GEMMs with
#                                        ncu at p = 0, 0.05, 0.1, 0.3
#                                        (PROFILE_P_RATES to change them;
#                                        bench/sparsedrop/profile_p.py)
#                                        into profile_p.md
#   SD_TABLES=NAME,NAME                  run only these tables of the
#                                        SparseDrop bench (engines, sweep,
#                                        persistent, pingpong, groups,
#                                        ranked, dx_tiles, dx_kinds, stages,
#                                        energy, autotune_ab, dense)
#   CLOCKS24=1                           also time the 2:4 GEMMs (Y and dX at
#                                        both layer shapes), cuBLAS and
#                                        cuSPARSELt in one process under
#                                        sustained load, clock and power
#                                        sampled (clocks24.py; CLOCKS24_ARGS)
#   PROFILE_VS_CUBLAS=1                  also profile one tuned launch of each
#                                        SparseDrop GEMM at p = 0 and cuBLAS's
#                                        dense ones (ncu raw metrics, CSV)
#                                        into profile_vs_cublas.csv
#   PROFILE_SOURCE=REGEX                 also profile the SparseDrop GEMMs
#                                        matching REGEX at the source level,
#                                        one tuned launch per p in
#                                        PROFILE_RATES (default 0.9):
#                                        profile_sd_source.csv
#   PROFILE24_SOURCE=REGEX               also profile the 2:4 helpers matching
#                                        REGEX at the source level (SASS, stall
#                                        samples) into profile_source.csv
#   PROFILE24=1                          also profile one launch of each 2:4
#                                        helper kernel with ncu
#                                        (PROFILE24_ARGS=--gemm: the 2:4
#                                        forward GEMM instead)
#                                        (bench/sparse24/profile_helpers.py)
#                                        into profile_helpers.md
#   CLOCKS=1                             also time the SparseDrop GEMMs and
#                                        cuBLAS round-robin under sustained
#                                        load, sampling the SM clock and
#                                        power (clocks_p.py) into clocks_p.md
#                                        (CLOCKS_ARGS: its arguments, e.g.
#                                        '--n 4096,16384 --rates 0,0.1
#                                        --dense': the dense DSL GEMM too;
#                                        bench/plot.py uses its JSON)
#   TEST_TIMEOUT=420, BENCH_TIMEOUT=180, TRITON_TIMEOUT=240
#                                        per-executable limits, seconds
#   TEST_SHARDS=N                        run each test executable as N
#                                        GoogleTest shards at once (their
#                                        logs and XML merged)
#   SPARSETILE_TEST_SEED=N               reproduce a GPU test run's inputs
#   SANITIZE=all | TOOL,TOOL,...         instead of the normal run: every GPU
#                                        test executable under each
#                                        compute-sanitizer tool (memcheck,
#                                        racecheck, synccheck, initcheck), then
#                                        a tool x executable table (sanitize.md)
#     SANITIZE_TESTS=REGEX               which executables (default: the GPU
#                                        ones; ONLY_TESTS narrows further)
#     SANITIZE_FILTER=GTEST_FILTER       default '-*M8200_*:*K8448_*:*BadPtx*:*NvJitLink*':
#                                        the two largest SparseDrop shapes,
#                                        whose kernels smaller cases also run,
#                                        the test that provokes a CUDA API
#                                        error on purpose (memcheck counts it),
#                                        and nvJitLink's advisory check (host
#                                        only; its log differs under the tools)
#     SANITIZE_TIMEOUT=300               seconds per tool and executable
#
# Environment it sets: LD_LIBRARY_PATH (the carried executables' RPATH points
# at the build machine, so libsparsetile_compiler.so is found through it),
# SPARSETILE_LIBDEVICE (libdevice of the local toolkit), a fresh
# SPARSETILE_CACHE_DIR under /tmp, SPARSETILE_EXAMPLES_DIR=./dsl_examples,
# SPARSETILE_SOURCE_DIR=. (the repository root: where the tests read their
# data, tests/common/SourceTree.h; ctest sets it too).
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
TEST_TIMEOUT=${TEST_TIMEOUT:-420}
TEST_SHARDS=${TEST_SHARDS:-1}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-180}
TRITON_TIMEOUT=${TRITON_TIMEOUT:-240}

if [ ! -f "$BUILD/tests.txt" ]; then
  echo "gpu_run: no carried build in $BUILD (run scripts/pack_gpu_build.sh on the build machine)" >&2
  exit 2
fi

# The compiler library and the C ABI library: carried xz-compressed; unpack
# them outside $OUT (so they do not come back with the logs) and check each
# against the MANIFEST.
LIBDIR="$BUILD/lib"
unpack() { # unpack LIB MANIFEST-KEY
  local lib=$1 key=$2 want got
  python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' \
    "$BUILD/lib/$lib.xz" "$LIBDIR/$lib"
  want=$(sed -n "s/^$key: //p" "$BUILD/MANIFEST" 2>/dev/null)
  got=$(sha256sum "$LIBDIR/$lib" | cut -d' ' -f1)
  if [ -n "$want" ] && [ "$want" != "$got" ]; then
    echo "gpu_run: unpacked $lib does not match the MANIFEST" >&2
    exit 2
  fi
}
if [ ! -f "$LIBDIR/libsparsetile_compiler.so" ]; then
  if [ ! -f "$LIBDIR/libsparsetile_compiler.so.xz" ]; then
    echo "gpu_run: $LIBDIR has no libsparsetile_compiler.so(.xz)" >&2
    exit 2
  fi
  LIBDIR=$(mktemp -d "${TMPDIR:-/tmp}/sparsetile-lib.XXXXXX")
  trap 'rm -rf "$LIBDIR"' EXIT
  unpack libsparsetile_compiler.so compiler-library-sha256
  [ -f "$BUILD/lib/libsparsetile.so.xz" ] && unpack libsparsetile.so capi-library-sha256
fi
# The executables and libsparsetile.so ask for the SONAMEs (.so.MAJOR).
major=$(sed -n 's/^soname-major: //p' "$BUILD/MANIFEST" 2>/dev/null)
for l in libsparsetile_compiler.so libsparsetile.so; do
  [ -z "$major" ] || [ ! -f "$LIBDIR/$l" ] || ln -sf "$l" "$LIBDIR/$l.$major"
done
[ -f "$LIBDIR/libsparsetile.so" ] && export SPARSETILE_LIBRARY="$LIBDIR/libsparsetile.so"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"

export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SPARSETILE_LIBDEVICE=${SPARSETILE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export SPARSETILE_CACHE_DIR="${TMPDIR:-/tmp}/sparsetile-gpu-cache"
rm -rf "$SPARSETILE_CACHE_DIR"
mkdir -p -m 0700 "$SPARSETILE_CACHE_DIR" # The cache refuses one others can write.
export SPARSETILE_EXAMPLES_DIR="$ROOT/dsl_examples"
# The tests read the source tree here, not at the build machine's path.
export SPARSETILE_SOURCE_DIR="$ROOT"
SPARSETILE_REVISION=$(sed -n 's/^revision: *//p' "$BUILD/MANIFEST" 2>/dev/null | head -1)
export SPARSETILE_REVISION
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

# gtest_counts XML NOTES: prints "passed skipped failed failed-names" from a
# GoogleTest XML file and writes why tests were skipped or failed to NOTES.
gtest_counts() {
  python3 - "$1" "$2" <<'PY'
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
}

# merge_xml OUT IN...: one GoogleTest XML holding the test cases of all
# shards (gtest_counts reads only the testcase elements).
merge_xml() {
  python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.Element("testsuites")
for f in sys.argv[2:]:
    try:
        for suite in ET.parse(f).getroot().iter("testsuite"):
            root.append(suite)
    except Exception:
        pass  # a shard that died wrote nothing: its rc says so
if len(root):
    ET.ElementTree(root).write(sys.argv[1])
PY
}

any_fail=0
# --- SANITIZE: compute-sanitizer over the GPU tests instead of the normal
# run. Each tool runs each executable once (a fresh disk cache each time, so
# kernels are compiled and loaded under the tool); an executable is clean
# under a tool when the tool reports 0 errors (racecheck: 0 error hazards;
# its warnings are counted beside) and its tests pass. Logs:
# logs/<exe>.<tool>.log (the tool's report), .xml (GoogleTest).
if [ -n "${SANITIZE:-}" ]; then
  CS=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
  tools=${SANITIZE//,/ }
  [ "$SANITIZE" = all ] && tools="memcheck racecheck synccheck initcheck"
  SANITIZE_TESTS=${SANITIZE_TESTS:-GpuTests|ThreadsTests|RuntimeJITTests|^sparsetile_.*_tests?$}
  SANITIZE_FILTER=${SANITIZE_FILTER:--*M8200_*:*K8448_*:*BadPtx*:*NvJitLink*}
  SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-300}
  if [ ! -x "$CS" ]; then
    echo "gpu_run: compute-sanitizer not found at $CS (set COMPUTE_SANITIZER)" >&2
    exit 2
  fi
  declare -A cell
  exes=()
  while read -r rel; do
    [ -n "$rel" ] || continue
    name=$(basename "$rel")
    [[ "$name" =~ $SANITIZE_TESTS ]] || continue
    [[ -z "${ONLY_TESTS:-}" || "$name" =~ $ONLY_TESTS ]] || continue
    exes+=("$name")
    for tool in $tools; do
      log="$OUT_DIR/logs/$name.$tool.log"
      xml="$OUT_DIR/logs/$name.$tool.xml"
      rm -rf "$xml" "$SPARSETILE_CACHE_DIR" && mkdir -p "$SPARSETILE_CACHE_DIR"
      echo "== $tool: $name"
      start=$(date +%s.%N)
      # --error-exitcode: a reported error fails the run even when the test
      # itself passes; child processes (the cache probe) are checked too.
      timeout "$SANITIZE_TIMEOUT" "$CS" --tool "$tool" --error-exitcode 86 \
        --target-processes all --print-limit 50 --log-file "$log" \
        "$BUILD/$rel" --gtest_filter="$SANITIZE_FILTER" --gtest_output="xml:$xml" \
        >"$OUT_DIR/logs/$name.$tool.out" 2>&1
      rc=$?
      secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
      read -r pass skip fail failed <<<"$(gtest_counts "$xml" "$OUT_DIR/logs/$name.$tool.notes")"
      # The tool's own count: "ERROR SUMMARY: N errors", or racecheck's
      # "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)".
      errors=$(grep -ho 'ERROR SUMMARY: [0-9]* error' "$log" | awk '{s+=$3} END {print s+0}')
      races=$(grep -ho '([0-9]* errors, [0-9]* warnings)' "$log" | tr -d '(,' |
              awk '{e+=$1; w+=$3} END {print e+0, w+0}')
      read -r race_err race_warn <<<"$races"
      # racecheck prints both summaries: count its errors once.
      [ "$race_err" -gt "$errors" ] && errors=$race_err
      note=""
      [ "$race_warn" -gt 0 ] && note=", $race_warn race warnings"
      if [ "$rc" = 124 ]; then c="TIMEOUT (${SANITIZE_TIMEOUT}s)"; any_fail=1
      elif [ "$errors" -gt 0 ]; then c="**$errors errors**"; any_fail=1
      elif [ "$rc" != 0 ] || [ "$fail" != 0 ]; then c="FAIL (rc $rc, $fail tests)"; any_fail=1
      elif [ ! -s "$xml" ]; then c="clean (not GoogleTest: exit status)"
      elif [ "$pass" = 0 ]; then c="no test ran"; any_fail=1
      else c="clean"; fi
      cell[$name.$tool]="$c ($pass passed, $skip skipped$note, ${secs}s)"
      echo "   ${cell[$name.$tool]}"
      [ "$errors" -gt 0 ] && grep -m 5 -E '^========= (Invalid|Race|Barrier|Uninitialized|Error|Program hit)' "$log" | sed 's/^/   /'
    done
  done < "$BUILD/tests.txt"
  {
    echo "## compute-sanitizer: tool x executable"
    echo
    echo "gtest filter: \`$SANITIZE_FILTER\`; $(grep -m1 '^gpu:' "$OUT_DIR/environment.txt")"
    echo
    printf '| executable |'; for tool in $tools; do printf ' %s |' "$tool"; done; echo
    printf '|---|'; for tool in $tools; do printf '%s' '---|'; done; echo
    for name in ${exes[@]+"${exes[@]}"}; do
      printf '| %s |' "$name"
      for tool in $tools; do printf ' %s |' "${cell[$name.$tool]}"; done
      echo
    done
    echo
    echo "Logs: $OUT_DIR (logs.tar.gz: <exe>.<tool>.log is the tool's report)"
  } > "$OUT_DIR/sanitize.md"
  tar -C "$OUT_DIR" -czf "$OUT_DIR/logs.tar.gz" logs && rm -rf "$OUT_DIR/logs"
  echo
  cat "$OUT_DIR/sanitize.md"
  exit $any_fail
fi

# --- Tests: every carried GoogleTest executable, one XML each. ---
SUMMARY="$OUT_DIR/summary.md"
rows=()
while read -r rel; do
  [ -n "$rel" ] || continue
  name=$(basename "$rel")
  [[ -z "${ONLY_TESTS:-}" || "$name" =~ $ONLY_TESTS ]] || continue
  exe="$BUILD/$rel"
  log="$OUT_DIR/logs/$name.log"
  xml="$OUT_DIR/logs/$name.xml"
  rm -f "$xml"
  echo "== $name"
  start=$(date +%s.%N)
  if [ "$TEST_SHARDS" -gt 1 ]; then
    # GoogleTest's own sharding, one process per shard at once: the GPU
    # tests spend most of their time in f64 host references on one core.
    # The shards share the disk cache (the JIT's writes are atomic renames).
    pids=()
    for ((i = 0; i < TEST_SHARDS; i++)); do
      GTEST_TOTAL_SHARDS=$TEST_SHARDS GTEST_SHARD_INDEX=$i \
        timeout "$TEST_TIMEOUT" "$exe" --gtest_output="xml:$xml.$i" \
        >"$log.$i" 2>&1 &
      pids+=($!)
    done
    rc=0
    for pid in "${pids[@]}"; do
      wait "$pid"; r=$?
      if [ "$r" = 124 ] || [ "$rc" = 0 ]; then rc=$r; fi
    done
    cat "$log".[0-9]* >"$log"; rm -f "$log".[0-9]*
    merge_xml "$xml" "$xml".[0-9]*; rm -f "$xml".[0-9]*
  else
    timeout "$TEST_TIMEOUT" "$exe" --gtest_output="xml:$xml" >"$log" 2>&1
    rc=$?
  fi
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  counts=$(gtest_counts "$xml" "$OUT_DIR/logs/$name.notes")
  read -r pass skip fail failed <<<"$counts"
  status=ok
  if [ "$rc" = 124 ]; then status="TIMEOUT (${TEST_TIMEOUT}s)"; any_fail=1
  elif [ "$rc" != 0 ] || [ "$fail" != 0 ]; then status="FAIL (rc $rc)"; any_fail=1
  elif [ ! -s "$xml" ] && grep -q 'gtest' "$log"; then status="NO XML (rc $rc)"; any_fail=1
  elif [ ! -s "$xml" ]; then status="ok (not GoogleTest: exit status only)"; fi
  [ "$failed" = "-" ] && failed=""
  rows+=("| $name | $pass | $skip | $fail | $secs | $status ${failed:+: $failed} |")
  # Why things were skipped or failed, and the seed of randomized tests.
  { grep -h 'SPARSETILE_TEST_SEED=' "$log" | head -1
    head -12 "$OUT_DIR/logs/$name.notes" 2>/dev/null; } | sed 's/^/   /'
  echo "   $pass passed, $skip skipped, $fail failed, ${secs}s, $status"
done < "$BUILD/tests.txt"

# --- Python tests: tests/python/test_*.py through its runner (exit 77: all
# skipped). They use the unpacked libsparsetile.so and the GPU's torch.
if [ -f tests/python/run.py ] && [[ -z "${ONLY_TESTS:-}" || "python" =~ $ONLY_TESTS ]]; then
  for t in tests/python/test_*.py; do
    name="python.$(basename "$t" .py)"
    log="$OUT_DIR/logs/$name.log"
    echo "== $name"
    start=$(date +%s.%N)
    timeout "$TEST_TIMEOUT" python3 tests/python/run.py "$t" >"$log" 2>&1
    rc=$?
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    # unittest's last lines: "Ran N tests", then "OK (skipped=S)" or "FAILED (...)".
    ran=$(sed -n 's/^Ran \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    skip=$(grep -o 'skipped=[0-9]*' "$log" | tail -1 | cut -d= -f2)
    fail=$(grep -o '\(failures\|errors\)=[0-9]*' "$log" | cut -d= -f2 | awk '{s+=$1} END {print s+0}')
    ran=${ran:-0}; skip=${skip:-0}
    case $rc in
      0) status=ok ;;
      77) status="skipped" ;;
      124) status="TIMEOUT (${TEST_TIMEOUT}s)"; any_fail=1 ;;
      *) status="FAIL (rc $rc)"; any_fail=1 ;;
    esac
    rows+=("| $name | $((ran - skip - fail)) | $skip | $fail | $secs | $status |")
    grep -E '^(FAIL|ERROR):|skipped ' "$log" | head -12 | sed 's/^/   /'
    echo "   $((ran - skip - fail)) passed, $skip skipped, $fail failed, ${secs}s, $status"
  done
fi

# --- The training example (examples/train_gpt.py): RUN_TRAIN=1 on one GPU,
# RUN_TRAIN_DDP=1 under torchrun on every GPU of the machine, both into
# $OUT_DIR/logs/train (packed with the logs). The torchrun runs are
# train_<variant>_ddp<N>.json, compared with the one-GPU runs at the same
# global batch.
# run_train LABEL LOG LAUNCHER...: runs train_gpt.py through LAUNCHER.
run_train() {
  local label=$1 log="$OUT_DIR/logs/train/$2" rc
  shift 2
  echo "== $label"
  mkdir -p "$OUT_DIR/logs/train"
  PYTHONUNBUFFERED=1 timeout "${TRAIN_TIMEOUT:-540}" "$@" examples/train_gpt.py \
    --variant "${TRAIN_VARIANT:-all}" --out "$OUT_DIR/logs/train" ${TRAIN_ARGS:-} \
    >"$log" 2>&1
  rc=$?
  tail -25 "$log"
  rows+=("| $label | | | | | $([ $rc = 0 ] && echo ok || echo "FAIL (rc $rc)") |")
  [ $rc = 0 ] || any_fail=1
}
if [ -f examples/train_gpt.py ]; then
  [ "${RUN_TRAIN:-0}" = 1 ] && run_train train_gpt train.log python3
  if [ "${RUN_TRAIN_DDP:-0}" = 1 ]; then
    gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
    run_train "train_gpt torchrun x$gpus" train_ddp.log \
      python3 -m torch.distributed.run --standalone --nproc_per_node="$gpus"
    python3 examples/plot_train.py "$OUT_DIR/logs/train" >/dev/null 2>&1 || true
  fi
fi

# --- Benches. ---
# run_bench NAME OUTFILE TIMEOUT COMMAND...: runs one bench, writes its
# markdown to $OUT_DIR/OUTFILE and its stderr to logs/NAME.err, prints both,
# and records a status row for the summary. Exit status 3 means the bench
# could not run here (no torch/triton/GPU).
bench_rows=()
run_bench() {
  local name=$1 out=$2 limit=$3 rc status
  shift 3
  [[ -z "${ONLY_BENCH:-}" || "$name" =~ $ONLY_BENCH ]] || return 0
  echo "== $name"
  PYTHONUNBUFFERED=1 timeout "$limit" "$@" \
    >"$OUT_DIR/$out" 2>"$OUT_DIR/logs/$name.err"
  rc=$?
  case $rc in
    0) status=ok ;;
    3) status="unavailable (no torch/triton/GPU)" ;;
    124) status="TIMEOUT (${limit}s)" ;;
    *) status="FAIL (rc $rc)" ;;
  esac
  cat "$OUT_DIR/$out"; tail -20 "$OUT_DIR/logs/$name.err"
  bench_rows+=("| $name | | | | | $status |")
}

# The benches' --json files; a previous run's are removed first, so that a
# bench that fails now leaves none behind to be taken for this run's.
BENCH_JSON=(sparse24_bench.json torch_sparse24.json sparsedrop_bench.json
            clocks_p.json clocks24.json
            torch_sparsedrop.json layers_bench.json autotune_bench.json
            torch_gemm.json)
for f in "${BENCH_JSON[@]}"; do rm -f "$OUT_DIR/$f"; done

if [ "${SKIP_BENCH:-0}" != 1 ]; then
  echo
  run_bench runtime_bench runtime_bench.md "$BENCH_TIMEOUT" \
    "$BUILD/bench/runtime/runtime_bench" --reps 5 \
    "dsl_examples/vector_add.tile:vector_add" \
    "dsl_examples/softmax.tile:softmax" \
    "dsl_examples/swiglu_fwd.tile:swiglu_fwd"
  run_bench triton_compile.py triton_compile.md "$TRITON_TIMEOUT" \
    python3 bench/runtime/triton_compile.py --reps 3 \
    --budget-s $((TRITON_TIMEOUT - 30))
  # Each sparsetile bench is followed by its PyTorch/cuBLAS/Triton baseline
  # in the same session, so every comparison comes from one run.
  run_bench gated_bench gated_bench.md "$BENCH_TIMEOUT" \
    "$BUILD/bench/gated/sparsetile_gated_bench"
  run_bench torch_glu.py torch_glu.md "$TRITON_TIMEOUT" \
    python3 bench/gated/torch_glu.py
  run_bench sparse24_bench sparse24_bench.md "$BENCH_TIMEOUT" \
    "$BUILD/bench/sparse24/sparsetile_sparse24_bench" \
    --json "$OUT_DIR/sparse24_bench.json"
  run_bench torch_mask.py torch_mask.md "$TRITON_TIMEOUT" \
    python3 bench/sparse24/torch_mask.py
  run_bench torch_sparse24.py torch_sparse24.md "$TRITON_TIMEOUT" \
    python3 bench/sparse24/torch_sparse24.py \
    --json "$OUT_DIR/torch_sparse24.json"
  run_bench layers_bench.py layers_bench.md "$BENCH_TIMEOUT" \
    python3 bench/python/layers_bench.py --json "$OUT_DIR/layers_bench.json"
  run_bench sparsedrop_bench sparsedrop_bench.md "$BENCH_TIMEOUT" \
    "$BUILD/bench/sparsedrop/sparsetile_sparsedrop_bench" \
    --json "$OUT_DIR/sparsedrop_bench.json" \
    ${SD_TABLES:+--tables "$SD_TABLES"}
  run_bench torch_sparsedrop.py torch_sparsedrop.md "$TRITON_TIMEOUT" \
    python3 bench/sparsedrop/torch_ref.py \
    --json "$OUT_DIR/torch_sparsedrop.json"
  if [ "${CLOCKS:-0}" = 1 ]; then
    # The GEMMs and cuBLAS round-robin under sustained load, with
    # nvidia-smi's SM clock and power sampled meanwhile (the p = 0.05-0.1
    # dip; comparisons at one power state).
    run_bench clocks_p clocks_p.md "$BENCH_TIMEOUT" \
      python3 bench/sparsedrop/clocks_p.py --json "$OUT_DIR/clocks_p.json" \
      ${CLOCKS_ARGS:-}
  fi
  if [ "${CLOCKS24:-0}" = 1 ]; then
    # The 2:4 forward GEMM, cuBLAS and cuSPARSELt round-robin under
    # sustained load, with the SM clock and power sampled.
    run_bench clocks24 clocks24.md "$BENCH_TIMEOUT" \
      python3 bench/sparse24/clocks24.py --json "$OUT_DIR/clocks24.json" \
      ${CLOCKS24_ARGS:-}
  fi
  if [ "${PROFILE24:-0}" = 1 ]; then
    run_bench profile_helpers profile_helpers.md "$BENCH_TIMEOUT" \
      ncu --profile-from-start off --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section Occupancy \
      --section LaunchStats --section WarpStateStats \
      --section ComputeWorkloadAnalysis \
      python3 bench/sparse24/profile_helpers.py ${PROFILE24_ARGS:-}
  fi
  if [ -n "${PROFILE24_SOURCE:-}" ]; then
    # The 2:4 helper kernels whose names match the regex PROFILE24_SOURCE,
    # one launch each at W 16384 x 4096, with ncu's per-instruction
    # counters and stall samples; the SASS source page (instructions
    # executed, warp stall samples by reason) goes to profile_source.csv.
    run_bench profile_source profile_source.md "$BENCH_TIMEOUT" \
      ncu --profile-from-start off --kernel-name regex:"$PROFILE24_SOURCE" \
      --section SourceCounters --section WarpStateStats \
      --export "$OUT_DIR/logs/profile_source" --force-overwrite \
      python3 bench/sparse24/profile_helpers.py --shapes 16384x4096
    ncu --import "$OUT_DIR/logs/profile_source.ncu-rep" --page source --csv \
      --print-source sass >"$OUT_DIR/profile_source.csv" \
      2>"$OUT_DIR/logs/profile_source_csv.err" || true
  fi
  if [ -n "${PROFILE_SOURCE:-}" ]; then
    # The SparseDrop GEMMs whose names match the regex PROFILE_SOURCE, one
    # tuned launch each per drop rate in PROFILE_RATES (default 0.9), N =
    # 4096, with ncu's per-instruction counters and stall samples; the SASS
    # source page goes to profile_sd_source.csv.
    run_bench profile_sd_source profile_sd_source.md "$BENCH_TIMEOUT" \
      ncu --nvtx --nvtx-include 'profiled/' \
      --kernel-name regex:"$PROFILE_SOURCE" \
      --section SpeedOfLight --section SourceCounters --section WarpStateStats \
      --export "$OUT_DIR/logs/profile_sd_source" --force-overwrite \
      python3 bench/sparsedrop/profile_p.py --nvtx \
      --rates "${PROFILE_RATES:-0.9}"
    ncu --import "$OUT_DIR/logs/profile_sd_source.ncu-rep" --page source \
      --csv --print-source sass >"$OUT_DIR/profile_sd_source.csv" \
      2>"$OUT_DIR/logs/profile_sd_source_csv.err" || true
  fi
  if [ "${PROFILE_VS_CUBLAS:-0}" = 1 ]; then
    # One tuned launch of each SparseDrop GEMM at p = 0 and of cuBLAS's
    # dense GEMM of the same shape (N = 4096), every kernel in the range
    # with its raw metrics (what each memory level moved; bench/NOTES.md,
    # where the joules go).
    run_bench profile_vs_cublas profile_vs_cublas.csv "$BENCH_TIMEOUT" \
      ncu --nvtx --nvtx-include 'profiled/' --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --page raw --csv \
      python3 bench/sparsedrop/profile_p.py --nvtx --cublas --rates 0
  fi
  if [ "${PROFILE:-0}" = 1 ]; then
    # Skips the warm-up launch of each of the three kernels.
    run_bench profile_p profile_p.md "$BENCH_TIMEOUT" \
      ncu --kernel-name regex:'dsd_fwd_tma|sdd_dx_tma|dsd_dw_tma' \
      --launch-skip 3 --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section Occupancy --section LaunchStats --section WarpStateStats \
      python3 bench/sparsedrop/profile_p.py \
      --rates "${PROFILE_P_RATES:-0,0.05,0.1,0.3}"
  fi
  # Compiles and tunes six candidates per shape on a fresh cache directory
  # in a child process first, hence the longer limit.
  run_bench autotune_bench autotune_bench.md "$((BENCH_TIMEOUT * 3))" \
    "$BUILD/bench/autotune/sparsetile_autotune_bench" \
    --json "$OUT_DIR/autotune_bench.json"
  run_bench torch_gemm.py torch_gemm.md "$TRITON_TIMEOUT" \
    python3 bench/autotune/torch_gemm.py --json "$OUT_DIR/torch_gemm.json"
else
  bench_rows+=("| benches | | | | | skipped (SKIP_BENCH=1) |")
fi

{
  echo "## Summary"
  echo
  echo "| executable | passed | skipped | failed | seconds | status |"
  echo "|---|---:|---:|---:|---:|---|"
  printf '%s\n' "${rows[@]}"
  printf '%s\n' "${bench_rows[@]}"
  echo
  echo "Logs: $OUT_DIR"
} > "$SUMMARY"
# The device tool brings back at most 8 files: pack the per-test logs, and
# the benches' JSON with them (a tarball of its own would be a ninth file in
# an ONLY_BENCH='sparsedrop|sparse24|torch_mask' run). bench/plot.py reads
# the JSON straight from logs.tar.gz.
json=()
for f in "${BENCH_JSON[@]}"; do
  [ -f "$OUT_DIR/$f" ] && json+=("$f")
done
tar -C "$OUT_DIR" -czf "$OUT_DIR/logs.tar.gz" logs ${json[@]+"${json[@]}"} &&
  rm -rf "$OUT_DIR/logs" && (cd "$OUT_DIR" && rm -f -- ${json[@]+"${json[@]}"})
echo
cat "$SUMMARY"
exit $any_fail
