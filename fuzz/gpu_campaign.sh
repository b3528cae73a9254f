#!/usr/bin/env bash
# A fuzz campaign ON THE GPU MACHINE's CPU cores, from .device/fuzz
# (fuzz/pack_gpu.sh) and the compiler library in .device/build
# (scripts/pack_gpu_build.sh). Each target runs as W libFuzzer workers over one
# shared corpus (-jobs=W -workers=W -reload=1), for SECONDS each.
#   bash fuzz/gpu_campaign.sh SECONDS FRONTEND_WORKERS COMPILE_WORKERS
# Runs in the background of another command too: FUZZ_WAIT=0 returns at once
# and `bash fuzz/gpu_campaign.sh --collect` later waits and summarizes.
# Writes $OUT/fuzz_campaign.tar.gz (worker logs, artifacts) and
# $OUT/fuzz_corpus.tar.gz (the corpus) and prints,
# per target, the executions summed over the workers (stat::number_of_
# executed_units of each worker's final stats) and the findings.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/sparsetile-fuzz}
W=/tmp/st-fuzz
F=$PWD/.device/fuzz
collect() {
  while pgrep -f "$F/fuzz_" >/dev/null; do sleep 2; done
  local rc=0
  for t in fuzz_frontend fuzz_compile_release; do
    [ -d "$W/$t" ] || continue
    local execs=0 n=0
    for log in "$W/$t"/logs/fuzz-*.log; do
      [ -f "$log" ] || continue
      n=$((n + 1))
      e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
      execs=$((execs + ${e:-0}))
    done
    local found
    found=$(find "$W/$t/artifacts" -type f | wc -l)
    local corpus
    corpus=$(find "$W/$t/corpus" -type f | wc -l)
    echo "fuzz campaign: $t workers=$n executions=$execs corpus=$corpus findings=$found revision=$(cat "$F/REVISION")"
    [ "$found" = 0 ] || rc=1
  done
  tar -C "$W" -czf "$OUT/fuzz_campaign.tar.gz" \
    $(cd "$W" && ls -d */logs */artifacts 2>/dev/null) 2>/dev/null
  # Apart: a grown front-end corpus passes the device tool's 16 MB a file.
  tar -C "$W" -czf "$OUT/fuzz_corpus.tar.gz" \
    $(cd "$W" && ls -d */corpus 2>/dev/null) 2>/dev/null
  return $rc
}
if [ "${1:-}" = --collect ]; then collect; exit; fi
SECS=${1:?usage: gpu_campaign.sh SECONDS FRONTEND_WORKERS COMPILE_WORKERS}
NF=${2:-8}
NC=${3:-8}
mkdir -p "$OUT" /tmp/st-fuzz-lib
rm -rf "$W"
if [ ! -f /tmp/st-fuzz-lib/libsparsetile_compiler.so ]; then
  python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' \
    .device/build/lib/libsparsetile_compiler.so.xz /tmp/st-fuzz-lib/libsparsetile_compiler.so || exit 2
fi
# The fuzz targets ask for the SONAME (.so.MAJOR, the pack's MANIFEST).
major=$(sed -n 's/^soname-major: //p' .device/build/MANIFEST 2>/dev/null)
[ -z "$major" ] || ln -sf libsparsetile_compiler.so "/tmp/st-fuzz-lib/libsparsetile_compiler.so.$major"
cp "$F/libstdc++.so.6" /tmp/st-fuzz-lib/
export LD_LIBRARY_PATH=/tmp/st-fuzz-lib
start() { # TARGET WORKERS TIMEOUT
  local t=$1 n=$2 to=$3
  [ "$n" -gt 0 ] || return 0
  mkdir -p "$W/$t/corpus" "$W/$t/artifacts" "$W/$t/logs"
  cp "$F"/seeds/* "$W/$t/corpus/"
  if [ -f "$F/corpus/$t.tar.gz" ]; then
    tar -C "$W/$t" -xzf "$F/corpus/$t.tar.gz"   # -> $W/$t/$t
    cp -n "$W/$t/$t"/* "$W/$t/corpus/" 2>/dev/null
    rm -rf "${W:?}/$t/$t"
  fi
  (cd "$W/$t/logs" && nice -n 5 "$F/$t" "$W/$t/corpus" -dict="$F/tile.dict" \
     -jobs="$n" -workers="$n" -reload=1 -max_total_time="$SECS" \
     -timeout="$to" -rss_limit_mb=4096 -max_len=131072 -print_final_stats=1 \
     -artifact_prefix="$W/$t/artifacts/" >/dev/null 2>&1) &
}
start fuzz_frontend "$NF" 10
start fuzz_compile_release "$NC" 30
[ "${FUZZ_WAIT:-1}" = 1 ] && { sleep 5; collect; }
exit 0
