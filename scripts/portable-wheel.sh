#!/usr/bin/env bash
# A portable wheel of the Python package, for GPU hosts with Python 3.12+ (and torch or CuPy) but
# no build tools or package registry; scripts/gpu-python.sh installs and tests it there:
#   OUT_DIR/reduce_tune-*.whl  the package: nanobind's stable ABI (cp312-abi3, any CPython >= 3.12),
#       SQLite and Boost.Program_options linked statically, the driver and NVRTC opened at run time
#       (as `pip wheel .` builds it, and libgcc linked statically too);
#   OUT_DIR/ pytest and its pure-Python dependencies, for a Python without it.
#   usage: scripts/portable-wheel.sh [OUT_DIR]   (default: build-portable-python/wheels)
#   PYTHON312: a CPython 3.12 to build with (default: python3.12 on PATH).
set -euo pipefail
if [ $# -ge 1 ]; then mkdir -p "$1" && out=$(cd "$1" && pwd); fi
cd "$(dirname "$0")/.."
out=${out:-$PWD/build-portable-python/wheels}
if exclude=$(git rev-parse --git-path info/exclude 2>/dev/null); then
  mkdir -p "$(dirname "$exclude")"
  grep -qx 'build\*/' "$exclude" 2>/dev/null || echo 'build*/' >> "$exclude"
fi
py=${PYTHON312:-$(command -v python3.12 || true)}
[ -n "$py" ] || { echo "portable-wheel.sh: no python3.12 (set PYTHON312)" >&2; exit 3; }
"$py" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' 
mkdir -p "$out"
rm -f "$out"/*.whl
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
export PATH=/usr/local/cuda/bin:$PATH
"$py" -m pip wheel --quiet --no-deps -w "$out" . \
  -C build-dir=build/python-portable/{wheel_tag} \
  -C cmake.define.REDUCE_TUNE_STATIC_DEPS=ON \
  -C cmake.define.CMAKE_EXE_LINKER_FLAGS=-static-libgcc \
  -C cmake.define.CMAKE_SHARED_LINKER_FLAGS=-static-libgcc
"$py" -m pip download --quiet --only-binary=:all: -d "$out" pytest
ls -la "$out"
# What the extension and the CLI need at run time: no libboost, libsqlite3, libcuda or libnvrtc.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && "$py" -m zipfile -e "$out"/reduce_tune-*.whl .)
for f in "$tmp"/reduce_tune/_ext*.so "$tmp"/reduce_tune/bin/reduce-tune; do
  echo "$(basename "$f"): $(readelf -d "$f" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); printf "%s ", $5}')"
  pattern='boost|sqlite|libcuda|nvrtc'
  if readelf -d "$f" | grep -Eq "NEEDED.*($pattern)"; then
    echo "portable-wheel.sh: $f needs a library a GPU host may lack" >&2
    exit 1
  fi
done
du -sh "$out" | cut -f1
