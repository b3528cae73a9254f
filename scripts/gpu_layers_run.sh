#!/usr/bin/env bash
# ON THE GPU MACHINE, from the repository root, with the build carried in
# .device/build (scripts/pack_gpu_build.sh): the Python GPU tests of the
# layers and the end-to-end training measurements of issue 45, each piece
# chosen by a variable, everything written under $OUT.
#
#   TESTS="test_training_gpu.py ..."  Python test files to run (default: the
#                                     layers', training and kernels' files;
#                                     TESTS=none runs none)
#   FFN=1       bench/python/ffn_bench.py (FFN_ARGS)        -> ffn.json/.log
#   LAYERS=1    bench/python/layers_bench.py                -> layers.json/.log
#   PROFILE=1   bench/python/step_profile.py (PROFILE_ARGS) -> profile.json/.log
#   HOST=1      bench/python/host_profile.py                -> host.log
#   TRAIN=1     examples/train_gpt.py at each of TRAIN_DIMS (default
#               "1024 2048", F = 4 d) and TRAIN_MODES (eager, graph), with
#               TRAIN_ARGS                        -> train_<d>_<mode>.tar.gz
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/sparsetile-layers}
mkdir -p "$OUT" /tmp/stl
for l in libsparsetile_compiler.so libsparsetile.so; do
  python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' \
    ".device/build/lib/$l.xz" "/tmp/stl/$l" || exit 2
done
BUILD=.device/build LIBDIR=/tmp/stl
# The executables and libsparsetile.so ask for the SONAMEs (.so.MAJOR).
major=$(sed -n 's/^soname-major: //p' "$BUILD/MANIFEST" 2>/dev/null)
for l in libsparsetile_compiler.so libsparsetile.so; do
  [ -z "$major" ] || [ ! -f "$LIBDIR/$l" ] || ln -sf "$l" "$LIBDIR/$l.$major"
done
export LD_LIBRARY_PATH=/tmp/stl SPARSETILE_LIBRARY=/tmp/stl/libsparsetile.so
export PYTHONPATH=$PWD/python SPARSETILE_CACHE_DIR=/tmp/sparsetile-layers-cache
export SPARSETILE_LIBDEVICE=/usr/local/cuda/nvvm/libdevice/libdevice.10.bc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/environment.txt"
git rev-parse --short HEAD >> "$OUT/environment.txt" 2>/dev/null

TESTS=${TESTS:-test_training_gpu.py test_layers_gpu.py test_kernels_gpu.py}
if [ "$TESTS" != none ]; then
  for t in $TESTS; do
    (cd tests/python && timeout 300 python3 run.py "$t") > "$OUT/${t%.py}.log" 2>&1
    echo "$t rc=$?"
  done
fi
run() { # run NAME CMD...: the output in $OUT/NAME.log
  local name=$1; shift
  timeout "${BENCH_TIMEOUT:-400}" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$?"
}
[ "${FFN:-0}" = 1 ] && run ffn python3 bench/python/ffn_bench.py ${FFN_ARGS:-} --json "$OUT/ffn.json"
[ "${LAYERS:-0}" = 1 ] && run layers python3 bench/python/layers_bench.py --json "$OUT/layers.json"
[ "${PROFILE:-0}" = 1 ] && run profile python3 bench/python/step_profile.py ${PROFILE_ARGS:-} --json "$OUT/profile.json"
[ "${HOST:-0}" = 1 ] && run host python3 bench/python/host_profile.py
if [ "${TRAIN:-0}" = 1 ]; then
  # TRAIN_MODES: "eager" and/or "graph" (--cuda-graph), each a process of its own.
  for d in ${TRAIN_DIMS:-1024 2048}; do
    for mode in ${TRAIN_MODES:-eager}; do
      name=train_${d}_$mode
      dir=/tmp/$name
      flag=""; [ "$mode" = graph ] && flag=--cuda-graph
      run "$name" python3 examples/train_gpt.py --d-model "$d" --d-ff $((4 * d)) \
        --out "$dir" $flag ${TRAIN_ARGS:-}
      { echo "== $name"; grep -E "^\|" "$OUT/$name.log"; } >> "$OUT/summary.txt"
      mv "$OUT/$name.log" "$dir/train.log"
      tar -czf "$OUT/$name.tar.gz" -C "$dir" .
    done
  done
fi
grep -hE "^(FAIL|ERROR):|^OK|^FAILED|^Ran" "$OUT"/test_*.log 2>/dev/null
for f in ffn layers; do [ -f "$OUT/$f.log" ] && grep -E "^\|" "$OUT/$f.log"; done
[ -f "$OUT/summary.txt" ] && cat "$OUT/summary.txt"
exit 0
