#!/usr/bin/env bash
# Replays every input in fuzz/regressions through stc, each kernel of it for
# sm_90 and sm_80 as fuzz_compile does: each must compile (exit 0) or be
# refused with a diagnostic (exit 1), never crash, hang or abort. Run by ctest
# (fuzz_regressions) in the normal build; the fuzz campaigns replay the same
# inputs under ASan + UBSan as part of their seed corpus.
#   bash fuzz/replay.sh path/to/stc
set -uo pipefail
STC=${1:?usage: fuzz/replay.sh STC}
DIR=$(cd "$(dirname "$0")" && pwd)/regressions
bad=0 n=0
for f in "$DIR"/*.tile; do
  kernels=$("$STC" --list "$f" 2>/dev/null | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p')
  for k in ${kernels:-""}; do
    for arch in sm_90 sm_80; do
      n=$((n + 1))
      timeout 120 "$STC" "$f" ${k:+--kernel="$k"} --arch="$arch" -o /dev/null 2>/tmp/replay.$$.err
      rc=$?
      if [ "$rc" -gt 1 ] || { [ "$rc" = 1 ] && ! grep -q 'error:' /tmp/replay.$$.err; }; then
        echo "fuzz regression $(basename "$f") kernel '$k' $arch: exit $rc"
        head -5 /tmp/replay.$$.err
        bad=1
      fi
    done
  done
done
rm -f /tmp/replay.$$.err
echo "fuzz/replay.sh: $n compiles of $(ls "$DIR"/*.tile | wc -l) inputs, $([ $bad = 0 ] && echo 'none crashed' || echo FAILURES)"
exit $bad
