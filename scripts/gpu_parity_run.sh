#!/usr/bin/env bash
# ON THE GPU MACHINE, from the repository root, with the build carried in
# .device/build (scripts/pack_gpu_build.sh): bench/triton_parity's GPU tests
# (tests/python/test_triton_parity_gpu.py: the DSL ports of the Triton
# tutorial kernels against float64 references), then parity.py (the ports
# against Triton kernels of the same designs and torch, round-robin in one
# process). Writes four files under $OUT (default /tmp/sparsetile-parity):
#
#   environment.txt               GPU, driver, revision, torch and Triton
#   test_triton_parity_gpu.log    the tests' unittest output
#   parity.md                     parity.py's markdown table (and stderr)
#   parity.json                   its rows, for bench/triton_parity/plot.py
#
#   PARITY_ARGS   parity.py's arguments (default --quick: about 4 minutes;
#                 "" for the tutorials' shapes, --full adds 16384^3;
#                 --only REGEX picks kernels)
#   TESTS=0       skip the tests;  PARITY=0  skip parity.py
#   TEST_TIMEOUT=250, PARITY_TIMEOUT=320   seconds (together under the
#                 device tool's 10 minutes; parity.json is rewritten after
#                 every shape, so a run cut short keeps what it measured)
#
# The tests and parity.py share one fresh sparsetile cache, so parity.py
# reuses the kernels the tests compiled. Exit status: 0 when the tests
# passed (or skipped) and parity.py's checks passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/sparsetile-parity}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=.device/build
LIBDIR=$(mktemp -d "${TMPDIR:-/tmp}/sparsetile-parity-lib.XXXXXX")
SPARSETILE_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sparsetile-parity-cache.XXXXXX")
export SPARSETILE_CACHE_DIR
trap 'rm -rf "$LIBDIR" "$SPARSETILE_CACHE_DIR"' EXIT
chmod 0700 "$SPARSETILE_CACHE_DIR"  # the cache refuses one others can write
for l in libsparsetile_compiler.so libsparsetile.so; do
  python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' \
    "$BUILD/lib/$l.xz" "$LIBDIR/$l" || { echo "gpu_parity_run: no $BUILD/lib/$l.xz (run scripts/pack_gpu_build.sh)" >&2; exit 2; }
done
# The executables and libsparsetile.so ask for the SONAMEs (.so.MAJOR).
major=$(sed -n 's/^soname-major: //p' "$BUILD/MANIFEST" 2>/dev/null)
for l in libsparsetile_compiler.so libsparsetile.so; do
  [ -z "$major" ] || [ ! -f "$LIBDIR/$l" ] || ln -sf "$l" "$LIBDIR/$l.$major"
done
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SPARSETILE_LIBRARY="$LIBDIR/libsparsetile.so"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export SPARSETILE_LIBDEVICE=${SPARSETILE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export SPARSETILE_SOURCE_DIR=$PWD
SPARSETILE_REVISION=$(sed -n 's/^revision: *//p' "$BUILD/MANIFEST" 2>/dev/null | head -1)
[ -n "$SPARSETILE_REVISION" ] || SPARSETILE_REVISION=$(git rev-parse --short HEAD 2>/dev/null)
export SPARSETILE_REVISION

{
  echo "revision: ${SPARSETILE_REVISION:-unknown}"
  echo "date:     $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu:      /'
  python3 -c 'import torch, triton; print("torch:    %s (CUDA %s)\ntriton:   %s" % (torch.__version__, torch.version.cuda, triton.__version__))' 2>&1
} > "$OUT/environment.txt"
cat "$OUT/environment.txt"

fail=0
if [ "${TESTS:-1}" != 0 ]; then
  (cd tests/python && timeout "${TEST_TIMEOUT:-250}" python3 run.py test_triton_parity_gpu.py) \
    > "$OUT/test_triton_parity_gpu.log" 2>&1
  rc=$?
  echo "test_triton_parity_gpu.py rc=$rc"
  grep -E '^(FAIL|ERROR):|^Ran |^OK|^FAILED|^SKIPPED' "$OUT/test_triton_parity_gpu.log"
  case $rc in 0|77) ;; *) fail=1 ;; esac
fi
if [ "${PARITY:-1}" != 0 ]; then
  # shellcheck disable=SC2086  # PARITY_ARGS is a list of words
  timeout "${PARITY_TIMEOUT:-320}" python3 bench/triton_parity/parity.py \
    ${PARITY_ARGS---quick} --json "$OUT/parity.json" > "$OUT/parity.md" 2>&1
  rc=$?
  echo "parity.py rc=$rc"
  cat "$OUT/parity.md"
  [ $rc = 0 ] || fail=1
fi
exit $fail
