#!/usr/bin/env bash
# Fills a seed corpus folder (default fuzz/corpus, git-ignored) from the
# kernels in dsl_examples/ and the lit inputs (.tile), one file each; lit's
# RUN/CHECK comments are kept (they are comments to the lexer).
#   bash fuzz/seed_corpus.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-fuzz/corpus}
mkdir -p "$DIR"
for f in dsl_examples/*.tile tests/lit/*/*.tile fuzz/regressions/*.tile; do
  [ -e "$f" ] || continue
  cp "$f" "$DIR/seed_$(echo "$f" | tr '/' '_')"
done
echo "fuzz: $(ls "$DIR" | wc -l) inputs in $DIR"
