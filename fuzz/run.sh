#!/usr/bin/env bash
# Runs one fuzz target for a given time, from the seed corpus, with the
# dictionary; findings (crash-*, leak-*, timeout-*, oom-*) land in
# ${ARTIFACTS:-fuzz/artifacts}/TARGET/ and make the script exit non-zero.
#   bash fuzz/run.sh fuzz_frontend 600        10 minutes of the front end
#   bash fuzz/run.sh fuzz_compile 3600 -jobs=1
#   bash fuzz/run.sh fuzz_compile_release 60  the whole compile of the normal
#                                             (release) build: what CI runs
#   bash fuzz/run.sh --check-seeds            every seed fits in -max_len
# Extra arguments go to libFuzzer. Builds the target first (fuzz/build.sh, or
# fuzz/build_release.sh for fuzz_compile_release).
set -euo pipefail
cd "$(dirname "$0")/.."
# Inputs up to 128 KB: the largest example kernels (sparse24.tile is 69 KB,
# sparsedrop.tile 25 KB) must reach the targets whole, not cut to a prefix.
MAX_LEN=${FUZZ_MAX_LEN:-131072}
if [ "${1:-}" = --check-seeds ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  bash fuzz/seed_corpus.sh "$dir" "$MAX_LEN"
  exit
fi
TARGET=${1:?usage: fuzz/run.sh fuzz_frontend|fuzz_compile|fuzz_compile_release SECONDS [libFuzzer args]}
SECONDS_TO_RUN=${2:-60}
shift 2 || shift $#
# Not BUILD_DIR: that names the normal build, which build_release.sh links.
FUZZ_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
if [ "$TARGET" = fuzz_compile_release ]; then
  [ "${SKIP_BUILD:-0}" = 1 ] || bash fuzz/build_release.sh
else
  [ "${SKIP_BUILD:-0}" = 1 ] || bash fuzz/build.sh "$TARGET"
fi
CORPUS=${CORPUS:-fuzz/corpus/$TARGET}
ART=${ARTIFACTS:-fuzz/artifacts}/$TARGET
mkdir -p "$CORPUS" "$ART"
bash fuzz/seed_corpus.sh "$CORPUS" "$MAX_LEN" >/dev/null
# The whole compile can take seconds on a big tile; a hang is > 30 s.
TIMEOUT=10
[ "$TARGET" != fuzz_frontend ] && TIMEOUT=30
set -x
"$FUZZ_DIR/fuzz/$TARGET" "$CORPUS" -dict=fuzz/tile.dict \
  -max_total_time="$SECONDS_TO_RUN" -timeout="$TIMEOUT" -rss_limit_mb=4096 \
  -max_len="$MAX_LEN" -print_final_stats=1 -artifact_prefix="$ART/" "$@"
