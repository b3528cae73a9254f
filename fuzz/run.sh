#!/usr/bin/env bash
# Runs one fuzz target for a given time, from the seed corpus, with the
# dictionary; findings (crash-*, leak-*, timeout-*, oom-*) land in
# ${ARTIFACTS:-fuzz/artifacts}/TARGET/ and make the script exit non-zero.
#   bash fuzz/run.sh fuzz_frontend 600        10 minutes of the front end
#   bash fuzz/run.sh fuzz_compile 3600 -jobs=1
# Extra arguments go to libFuzzer. Builds the target first (fuzz/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${1:?usage: fuzz/run.sh fuzz_frontend|fuzz_compile SECONDS [libFuzzer args]}
SECONDS_TO_RUN=${2:-60}
shift 2 || shift $#
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
[ "${SKIP_BUILD:-0}" = 1 ] || bash fuzz/build.sh "$TARGET"
CORPUS=${CORPUS:-fuzz/corpus/$TARGET}
ART=${ARTIFACTS:-fuzz/artifacts}/$TARGET
mkdir -p "$CORPUS" "$ART"
bash fuzz/seed_corpus.sh "$CORPUS" >/dev/null
# The whole compile can take seconds on a big tile; a hang is > 30 s.
TIMEOUT=10
[ "$TARGET" = fuzz_compile ] && TIMEOUT=30
set -x
"$BUILD_DIR/fuzz/$TARGET" "$CORPUS" -dict=fuzz/tile.dict \
  -max_total_time="$SECONDS_TO_RUN" -timeout="$TIMEOUT" -rss_limit_mb=4096 \
  -max_len=4096 -print_final_stats=1 -artifact_prefix="$ART/" "$@"
