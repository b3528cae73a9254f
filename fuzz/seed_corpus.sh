#!/usr/bin/env bash
# Fills a seed corpus folder (default fuzz/corpus, git-ignored) from the
# kernels in dsl_examples/ and the lit inputs (.tile), one file each; lit's
# RUN/CHECK comments are kept (they are comments to the lexer).
#   bash fuzz/seed_corpus.sh [DIR [MAX_LEN]]
# With MAX_LEN (run.sh passes its -max_len), fails naming every seed longer
# than that: libFuzzer would silently fuzz only its first MAX_LEN bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-fuzz/corpus}
MAX_LEN=${2:-}
mkdir -p "$DIR"
too_long=0
for f in dsl_examples/*.tile tests/lit/*/*.tile fuzz/regressions/*.tile; do
  [ -e "$f" ] || continue
  if [ -n "$MAX_LEN" ] && [ "$(stat -c %s "$f")" -gt "$MAX_LEN" ]; then
    echo "fuzz: seed $f is $(stat -c %s "$f") bytes, more than -max_len=$MAX_LEN" >&2
    too_long=1
  fi
  cp "$f" "$DIR/seed_$(echo "$f" | tr '/' '_')"
done
echo "fuzz: $(ls "$DIR" | wc -l) inputs in $DIR"
[ $too_long = 0 ] && [ -n "$MAX_LEN" ] && echo "fuzz: none longer than -max_len=$MAX_LEN"
exit $too_long
