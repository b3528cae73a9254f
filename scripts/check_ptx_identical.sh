#!/usr/bin/env bash
# Proves that two stc binaries compile every example kernel to the same
# text, so that a refactor of the compiler can be shown not to change its
# output.
#
# Usage: scripts/check_ptx_identical.sh REF_STC NEW_STC [EXAMPLES_DIR]
#
# For every file in dsl_examples/ (or EXAMPLES_DIR) it compares `--list`, and
# for every kernel `stc --list` names, each of these compile configurations:
#   constants  the defaults; then, one at a time, every `const X: i32 = 0|1`
#              flipped (-D X=1 / -D X=0) and every `const T: dtype = bf16`
#              set to f16, since those flags select different code paths
#   arch       the default (sm_90, i.e. sm_90a for TMA/wgmma kernels), sm_80
#   div16      none, `--div16 all`
#   emit       --emit=ptx and --emit=tile
# Two runs are identical when their exit status, standard output and standard
# error are all the same, so "both fail with the same message" (e.g. a TMA
# kernel on sm_80) counts as identical.
#
# Libraries: stc finds libsparsetile_compiler.so through a RUNPATH, which
# LD_LIBRARY_PATH overrides, so each binary gets its own search path:
#   REF_LD_LIBRARY_PATH  for REF_STC; default: the folder REF_STC-lib when it
#                        exists (e.g. /tmp/stc-ref and /tmp/stc-ref-lib, a
#                        copy of the library taken with the binary before a
#                        rebuild), else the inherited LD_LIBRARY_PATH
#   NEW_LD_LIBRARY_PATH  for NEW_STC; default: the inherited LD_LIBRARY_PATH
# Two different binaries that would load the same library file are refused,
# since comparing them would prove nothing.
#
# Prints one line per difference, then a summary line; exits 1 if anything
# differs, 2 on a usage error.
set -uo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 REF_STC NEW_STC [EXAMPLES_DIR]" >&2
  exit 2
fi
REF=$1
NEW=$2
EXAMPLES=${3:-"$(cd "$(dirname "$0")/.." && pwd)/dsl_examples"}
if [ -z "${REF_LD_LIBRARY_PATH+set}" ] && [ -d "$REF-lib" ]; then
  REF_LIB=$REF-lib
else
  REF_LIB=${REF_LD_LIBRARY_PATH-${LD_LIBRARY_PATH-}}
fi
NEW_LIB=${NEW_LD_LIBRARY_PATH-${LD_LIBRARY_PATH-}}
for b in "$REF" "$NEW"; do
  if [ ! -x "$b" ]; then
    echo "$0: '$b' is not an executable" >&2
    exit 2
  fi
done

# compilerLib LIBPATH BIN: the libsparsetile_compiler.so BIN would load.
compilerLib() {
  LD_LIBRARY_PATH=$1 ldd "$2" 2>/dev/null |
    awk '/libsparsetile_compiler/ { print $3 }' | xargs -r realpath 2>/dev/null
}
REF_SO=$(compilerLib "$REF_LIB" "$REF")
NEW_SO=$(compilerLib "$NEW_LIB" "$NEW")
echo "reference: $REF (library: ${REF_SO:-none found})"
echo "new:       $NEW (library: ${NEW_SO:-none found})"
if [ -n "$REF_SO" ] && [ "$REF_SO" = "$NEW_SO" ] &&
  [ "$(realpath "$REF")" != "$(realpath "$NEW")" ]; then
  echo "$0: both binaries load $REF_SO; give the reference its own library" \
    "(REF_LD_LIBRARY_PATH, or a folder $REF-lib)" >&2
  exit 2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_ptx.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

compared=0
differ=0

# run LIBPATH BIN OUTPREFIX ARGS...: records stdout, stderr and exit status.
run() {
  local lib=$1 bin=$2 out=$3
  shift 3
  LD_LIBRARY_PATH=$lib "$bin" "$@" >"$out.out" 2>"$out.err"
  echo $? >"$out.rc"
}

# compare DESCRIPTION ARGS...: one configuration, both binaries.
compare() {
  local what=$1
  shift
  run "$REF_LIB" "$REF" "$TMP/ref" "$@"
  run "$NEW_LIB" "$NEW" "$TMP/new" "$@"
  compared=$((compared + 1))
  local f
  for f in rc out err; do
    if ! cmp -s "$TMP/ref.$f" "$TMP/new.$f"; then
      differ=$((differ + 1))
      echo "DIFFER ($f): $what"
      diff "$TMP/ref.$f" "$TMP/new.$f" | head -n 10 | sed 's/^/    /'
      return
    fi
  done
}

shopt -s nullglob
files=("$EXAMPLES"/*.tile)
if [ ${#files[@]} -eq 0 ]; then
  echo "$0: no .tile files in $EXAMPLES" >&2
  exit 2
fi

kernels=0
for file in "${files[@]}"; do
  compare "$(basename "$file") --list" "$file" --list
  # Kernel signatures from the reference binary: "name(a: *f32, const X: i32 = 0)".
  if ! LD_LIBRARY_PATH=$REF_LIB "$REF" "$file" --list >"$TMP/list" 2>/dev/null; then
    echo "$0: reference stc cannot list $file" >&2
    differ=$((differ + 1))
    continue
  fi
  while IFS= read -r sig; do
    name=${sig%%(*}
    [ -n "$name" ] || continue
    kernels=$((kernels + 1))
    variants=("")
    while IFS= read -r d; do
      [ -n "$d" ] && variants+=("$d")
    done < <(printf '%s\n' "$sig" | grep -oE 'const [A-Za-z_][A-Za-z0-9_]*: (i32 = [01]|dtype = bf16)[,)]' |
      sed -E -e 's/[,)]$//' \
        -e 's/^const ([A-Za-z0-9_]+): i32 = 0$/\1=1/' \
        -e 's/^const ([A-Za-z0-9_]+): i32 = 1$/\1=0/' \
        -e 's/^const ([A-Za-z0-9_]+): dtype = bf16$/\1=f16/')
    for v in "${variants[@]}"; do
      dargs=()
      [ -n "$v" ] && dargs=(-D "$v")
      for arch in "" sm_80; do
        aargs=()
        [ -n "$arch" ] && aargs=(--arch "$arch")
        for div in "" all; do
          vargs=()
          [ -n "$div" ] && vargs=(--div16 "$div")
          for emit in ptx tile; do
            compare "$(basename "$file") --kernel $name ${dargs[*]} ${aargs[*]} ${vargs[*]} --emit=$emit" \
              "$file" --kernel "$name" "${dargs[@]}" "${aargs[@]}" "${vargs[@]}" --emit="$emit"
          done
        done
      done
    done
  done <"$TMP/list"
done

echo "check_ptx_identical: $kernels kernels in ${#files[@]} files, $compared kernel x config runs compared (ptx and tile; sm_90 and sm_80; div16 none and all; constant variants), $differ differ"
[ "$differ" -eq 0 ]
