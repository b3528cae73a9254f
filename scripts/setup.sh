#!/usr/bin/env bash
# Installs what sparsetile needs to build, if it is missing (idempotent), and
# checks the CUDA Toolkit. Sourced by scripts/main.sh and scripts/test.sh.
#
# Why each package:
#   llvm-22-dev libmlir-22-dev  MLIR/LLVM 22 headers, static libs, TableGen
#   mlir-22-tools llvm-22-tools mlir-tblgen; FileCheck, lit, not (tests)
#   libfmt-dev                  fmt (header-only use)
#   libgtest-dev                GoogleTest
#   cmake ninja-build g++       the build
#   zlib1g-dev libzstd-dev      LLVM's support library links zlib and zstd
#   python3-venv                tests/python/test_packaging.py installs the
#                               wheel into a fresh venv (venv + ensurepip)
set -euo pipefail

packages=(cmake ninja-build g++ llvm-22-dev libmlir-22-dev mlir-22-tools
          llvm-22-tools libfmt-dev libgtest-dev zlib1g-dev libzstd-dev
          python3-venv)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
for f in bin/ptxas include/cuda.h include/nvrtc.h include/nvJitLink.h nvvm/libdevice/libdevice.10.bc; do
  if [ ! -e "$CUDA_ROOT/$f" ]; then
    echo "setup: the CUDA Toolkit 13 is missing or incomplete: $CUDA_ROOT/$f not found." >&2
    echo "setup: install it at /usr/local/cuda or set CUDA_ROOT." >&2
    exit 1
  fi
done
echo "setup: toolchain ready (LLVM/MLIR $(/usr/lib/llvm-22/bin/llvm-config --version), CUDA at $CUDA_ROOT)"
