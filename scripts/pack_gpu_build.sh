#!/usr/bin/env bash
# Builds sparsetile HERE (the machine with LLVM/MLIR) and packs what the GPU
# machine needs into the carry folder .device/build (gitignored), for
# scripts/gpu_run.sh to run there. The GPU machine has CUDA but no LLVM/MLIR,
# so nothing is built there.
#
# Usage: bash scripts/pack_gpu_build.sh        (from anywhere in the repo)
#   BUILD_DIR=build   build directory (default: build, as scripts/build.sh)
#   JOBS=2            ninja jobs
#   SKIP_BUILD=1      pack an existing build without running ninja
#   CARRY_LIMIT_MIB=60  fail if .device/build plus the working tree exceed
#                       this (everything else in .device/ is carried too:
#                       keep the whole of .device/ small)
#   COMPRESS=0        do not xz the compiler library
#
# What is packed (paths relative to the build directory are kept, so helper
# executables stay next to the tests that run them):
#   lib/libsparsetile_compiler.so.xz  stripped (--strip-unneeded), then
#     xz-compressed (~47 MiB -> ~12 MiB; COMPRESS=0 keeps it plain);
#     gpu_run.sh unpacks it into a temporary directory and checks its sha256
#   lib/libsparsetile.so.xz  the C ABI library (runtime + ops, loading the
#     compiler library) the Python package loads; stripped and compressed
#     likewise. Both are packed under their plain names; the GPU scripts link
#     their SONAMEs (.so.MAJOR, MANIFEST's soname-major) after unpacking
#   bin/stc
#   every GoogleTest executable ctest knows (ctest --show-only=json-v1; lit is
#     skipped, it needs LLVM), plus tests/runtime/runtime_cache_probe
#   bench/runtime/runtime_bench and every other bench executable
#   tests.txt  the test executables, one per line, relative to .device/build
#   MANIFEST   git revision, date, sizes
# Carried executables have RPATHs into this machine's build directory; on the
# GPU machine gpu_run.sh puts lib/ on LD_LIBRARY_PATH instead.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-2}
CARRY=.device/build
LIMIT_MIB=${CARRY_LIMIT_MIB:-60}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}" >/dev/null
  fi
  # Keep going past unrelated failures; what we need is checked below.
  ninja -C "$BUILD_DIR" -j "$JOBS" -k 0 || echo "pack: warning: some targets failed to build (see above)" >&2
fi
B=$(cd "$BUILD_DIR" && pwd)

# The test executables, from ctest's own list (deduplicated, ELF only).
mapfile -t TESTS < <(cd "$B" && ctest --show-only=json-v1 2>/dev/null | python3 -c '
import json, os, sys
b = os.path.realpath(sys.argv[1])
seen = []
for t in json.load(sys.stdin).get("tests", []):
    cmd = t.get("command") or []
    if not cmd:
        continue
    exe = os.path.realpath(cmd[0])
    if not exe.startswith(b + os.sep) or exe in seen:
        continue
    seen.append(exe)
for exe in seen:
    print(os.path.relpath(exe, b))
' "$B")
# Helpers the tests run, and every bench executable (gpu_run.sh runs
# runtime_bench; the others are carried for manual runs).
EXTRA=(tests/runtime/runtime_cache_probe bench/runtime/runtime_bench)
while IFS= read -r f; do
  case " ${EXTRA[*]} " in *" $f "*) continue ;; esac
  head -c 4 "$B/$f" | grep -q ELF && EXTRA+=("$f")
done < <(cd "$B" && find bench -type f -perm -u+x ! -path '*/CMakeFiles/*' 2>/dev/null | sort)

rm -rf "$CARRY"
mkdir -p "$CARRY/lib" "$CARRY/bin"
missing=0
need() { [ -f "$B/$1" ] || { echo "pack: missing $B/$1" >&2; missing=1; }; }
need compiler/libsparsetile_compiler.so
need runtime/libsparsetile.so
need compiler/stc
for f in "${EXTRA[@]}"; do need "$f"; done
[ $missing = 0 ] || exit 1

strip --strip-unneeded -o "$CARRY/lib/libsparsetile_compiler.so" "$B/compiler/libsparsetile_compiler.so"
strip --strip-unneeded -o "$CARRY/lib/libsparsetile.so" "$B/runtime/libsparsetile.so"
strip --strip-unneeded -o "$CARRY/bin/stc" "$B/compiler/stc"
: > "$CARRY/tests.txt"
for f in "${TESTS[@]}"; do
  if ! head -c 4 "$B/$f" 2>/dev/null | grep -q ELF; then
    echo "pack: warning: test executable $f was not built; not packed" >&2
    continue
  fi
  mkdir -p "$CARRY/$(dirname "$f")"
  strip --strip-unneeded -o "$CARRY/$f" "$B/$f"
  echo "$f" >> "$CARRY/tests.txt"
done
for f in "${EXTRA[@]}"; do
  mkdir -p "$CARRY/$(dirname "$f")"
  strip --strip-unneeded -o "$CARRY/$f" "$B/$f"
done

# The libraries carry versioned SONAMEs (libsparsetile_compiler.so.MAJOR),
# which is what the executables ask for. The carry holds no symlinks: the
# GPU scripts make the SONAME links after unpacking (MANIFEST's
# soname-major), and the check below gets them for its duration.
MAJOR=$(readelf -d "$B/compiler/libsparsetile_compiler.so" |
        sed -n 's/.*(SONAME).*\[libsparsetile_compiler\.so\.\([0-9]*\)\]/\1/p')
[ -n "$MAJOR" ] || { echo "pack: no SONAME on libsparsetile_compiler.so" >&2; exit 1; }
for l in libsparsetile_compiler.so libsparsetile.so; do
  ln -sf "$l" "$CARRY/lib/$l.$MAJOR"
done

# Nothing carried may need a library the GPU machine lacks (LLVM, gtest, fmt
# are all linked in statically); report anything unexpected.
for f in "$CARRY"/bin/* "$CARRY"/lib/*.so $(sed "s|^|$CARRY/|" "$CARRY/tests.txt") \
         "${EXTRA[@]/#/$CARRY/}"; do
  LD_LIBRARY_PATH="$CARRY/lib" ldd "$f" | awk -v f="$f" '
    /not found/ { print "pack: " f ": " $1 " not found" > "/dev/stderr"; bad=1 }
    $1 ~ /^lib(LLVM|MLIR|gtest|fmt|clang)/ { print "pack: warning: " f " needs " $1 > "/dev/stderr" }
    END { exit bad }'
done
rm -f "$CARRY/lib/"*".so.$MAJOR"

SO="$CARRY/lib/libsparsetile_compiler.so"
SO_SHA=$(sha256sum "$SO" | cut -d' ' -f1)
SO_BYTES=$(stat -c %s "$SO")
CAPI="$CARRY/lib/libsparsetile.so" # the C ABI library (Python package)
CAPI_SHA=$(sha256sum "$CAPI" | cut -d' ' -f1)
if [ "${COMPRESS:-1}" != 0 ]; then
  xz -6 -T2 "$SO" "$CAPI" # -> .xz, removes the originals
fi

{
  echo "revision: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
  echo "packed:   $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
  echo "build:    $B"
  echo "tests:    $(wc -l < "$CARRY/tests.txt")"
  echo "compiler-library-sha256: $SO_SHA"
  echo "compiler-library-bytes:  $SO_BYTES"
  echo "capi-library-sha256: $CAPI_SHA"
  echo "soname-major: $MAJOR"
  (cd "$CARRY" && find . -type f ! -name MANIFEST -printf '%10s  %p\n' | sort -k2)
} > "$CARRY/MANIFEST"

carry_bytes=$(du -sb "$CARRY" | cut -f1)
others=$(find .device -mindepth 1 -maxdepth 1 ! -name build -printf '%f ' 2>/dev/null)
[ -z "$others" ] || echo "pack: note: .device/ also holds: $others(carried too when .device is carried; $(du -sh .device | cut -f1) in all)" >&2
tree_bytes=$( { git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null || true; } | awk '{s+=$1} END {print s+0}')
total=$((carry_bytes + tree_bytes))
awk -v n="$(wc -l < "$CARRY/tests.txt")" -v c="$carry_bytes" -v t="$tree_bytes" -v l="$LIMIT_MIB" 'BEGIN {
  printf "pack: %d test executables; .device/build %.1f MiB, working tree %.1f MiB, total %.1f MiB (limit %d MiB)\n",
         n, c / 1048576, t / 1048576, (c + t) / 1048576, l }'
if [ "$total" -gt $((LIMIT_MIB * 1048576)) ]; then
  echo "pack: too big to carry" >&2
  exit 1
fi
