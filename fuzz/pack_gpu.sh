#!/usr/bin/env bash
# Packs the fuzz targets for a campaign on the GPU machine's CPU cores (16 or
# more, against this machine's 2) into .device/fuzz (gitignored, carried with
# .device/build): fuzz_frontend (ASan + UBSan, fuzz/build.sh) and
# fuzz_compile_release (fuzz/build_release.sh, linked against the compiler
# library that scripts/pack_gpu_build.sh carries), the libstdc++ they were
# linked against (the GPU machine's may be older), and the seed corpus.
# fuzz/gpu_campaign.sh runs them there. To go on from the corpus a campaign
# brings back: tar -C /tmp/fc -xzf fuzz_campaign.tar.gz, then copy
# /tmp/fc/TARGET/corpus/* into fuzz/corpus/TARGET/ before packing again.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_DIR=${FUZZ_BUILD_DIR:-build-fuzz}/fuzz
[ "${SKIP_BUILD:-0}" = 1 ] || bash fuzz/build.sh fuzz_frontend
# Always (it takes seconds): the harness includes Compiler.h, so one built
# against an older header crashes on the newer library it is carried with
# (run 3 in README.md).
bash fuzz/build_release.sh
rm -rf .device/fuzz
mkdir -p .device/fuzz/seeds
for t in fuzz_frontend fuzz_compile_release; do
  strip --strip-debug -o ".device/fuzz/$t" "$FUZZ_DIR/$t"
done
cp -L "$(g++ -print-file-name=libstdc++.so.6)" .device/fuzz/
bash fuzz/seed_corpus.sh .device/fuzz/seeds "${FUZZ_MAX_LEN:-131072}" >/dev/null
cp fuzz/tile.dict .device/fuzz/
# The working corpora of earlier campaigns (fuzz/corpus/TARGET, gitignored;
# gpu_campaign.sh brings each campaign's back), so a campaign goes on from the
# last one instead of from the seeds.
for t in fuzz_frontend fuzz_compile_release; do
  if [ -d "fuzz/corpus/$t" ]; then
    mkdir -p ".device/fuzz/corpus"
    tar -C fuzz/corpus -czf ".device/fuzz/corpus/$t.tar.gz" "$t"
  fi
done
git rev-parse HEAD > .device/fuzz/REVISION
du -sh .device/fuzz
