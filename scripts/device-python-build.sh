#!/usr/bin/env bash
# Builds, on this machine, what scripts/device-python.sh installs on the lent GPU machine (Python
# 3.12 with torch and CuPy, no package registries, no Boost libraries or SQLite headers):
#   build-device-python/wheels/reduce_tune-*.whl  the package: nanobind's stable ABI (cp312-abi3,
#       any CPython >= 3.12), SQLite and Boost.Program_options linked statically, the driver and
#       NVRTC opened at run time (as scripts/device-build.sh builds the CLI);
#   build-device-python/wheels/ pytest and its pure-Python dependencies, for a Python without it.
# The folder matches the git exclude entry build*/ (scripts/device-build.sh adds it), so the device
# call carries it by naming it in `carry`.
#   PYTHON312: a CPython 3.12 to build with (default: pyenv's 3.12.1, else python3.12).
set -euo pipefail
cd "$(dirname "$0")/.."
if exclude=$(git rev-parse --git-path info/exclude 2>/dev/null); then
  mkdir -p "$(dirname "$exclude")"
  grep -qx 'build\*/' "$exclude" 2>/dev/null || echo 'build*/' >> "$exclude"
fi
py=${PYTHON312:-}
[ -n "$py" ] || { [ -x /root/.pyenv/versions/3.12.1/bin/python ] && py=/root/.pyenv/versions/3.12.1/bin/python; } || true
[ -n "$py" ] || py=$(command -v python3.12)
"$py" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' 
out=build-device-python/wheels
rm -rf "$out"
mkdir -p "$out"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
export PATH=/usr/local/cuda/bin:$PATH
"$py" -m pip wheel --quiet --no-deps -w "$out" . \
  -C build-dir=build/python-device/{wheel_tag} \
  -C cmake.define.REDUCE_TUNE_STATIC_DEPS=ON \
  -C cmake.define.CMAKE_EXE_LINKER_FLAGS=-static-libgcc \
  -C cmake.define.CMAKE_SHARED_LINKER_FLAGS=-static-libgcc
"$py" -m pip download --quiet --only-binary=:all: -d "$out" pytest
ls -la "$out"
# What the extension and the CLI need at run time: no libboost, libcuda or libnvrtc; the CLI no
# libsqlite3 either (the extension links libsqlite3.so.0, which the GPU machine has).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && "$py" -m zipfile -e "$OLDPWD/$out"/reduce_tune-*.whl .)
for f in "$tmp"/reduce_tune/_ext*.so "$tmp"/reduce_tune/bin/reduce-tune; do
  echo "$(basename "$f"): $(readelf -d "$f" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); printf "%s ", $5}')"
  pattern='boost|libcuda|nvrtc'
  case $f in *bin/reduce-tune) pattern="$pattern|sqlite" ;; esac
  if readelf -d "$f" | grep -Eq "NEEDED.*($pattern)"; then
    echo "device-python-build.sh: $f needs a library the GPU machine lacks" >&2
    exit 1
  fi
done
du -sh build-device-python | cut -f1
