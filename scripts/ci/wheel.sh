#!/usr/bin/env bash
# CI: the wheel that `pip wheel .` builds installs and works on a machine without the build
# dependencies. The wheel python.sh tested (scripts/ci/lib/wheel.sh: built once, tagged manylinux
# by auditwheel; built here where python.sh has not run), then, in a mount and
# network namespace (unshare) where the CUDA toolkit (/usr/local), Boost's and SQLite's headers and
# libraries, the compilers, CMake and Ninja are hidden and nothing can be downloaded, installs it
# with `pip install --no-index` into a fresh virtual environment and checks that:
#   - it imports, and says why there is no GPU (this machine has no driver) without raising;
#   - its extension and CLI need no libsqlite3, libboost, libcuda or libnvrtc (ldd, readelf);
#   - with no NVRTC anywhere, nvrtc_info() says to install nvidia-cuda-nvrtc; after
#     `pip install nvidia-cuda-nvrtc` (the PyPI wheel, downloaded once into .dev/wheels), it opens
#     that NVRTC from the environment's site-packages and compiles a kernel with it;
#   - the CLI inside the package runs.
#   REDUCE_TUNE_PYTHON312: a CPython 3.12 or newer (scripts/ci/lib/wheel.sh).
set -euo pipefail
source "$(dirname "$0")/lib/wheel.sh"
command -v unshare >/dev/null || { echo "wheel.sh: unshare (util-linux) is needed" >&2; exit 1; }
build_ci_wheel

mkdir -p "$root/.dev/wheels"
if ! ls "$root"/.dev/wheels/nvidia_cuda_nvrtc-*.whl >/dev/null 2>&1; then
  "$py" -m pip download --quiet --no-deps --only-binary=:all: -d "$root/.dev/wheels" nvidia-cuda-nvrtc
fi
nvrtc_whl=$(ls "$root"/.dev/wheels/nvidia_cuda_nvrtc-*.whl | head -1)

# ---- install and check where the build dependencies are not ----------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hide=()
for p in /usr/include/sqlite3.h /usr/include/sqlite3ext.h /usr/include/boost \
         /usr/lib/x86_64-linux-gnu/libsqlite3.* /usr/lib/x86_64-linux-gnu/libboost_* \
         /lib/x86_64-linux-gnu/libsqlite3.* /lib/x86_64-linux-gnu/libboost_* \
         "$(readlink -f /usr/bin/gcc 2>/dev/null)" "$(readlink -f /usr/bin/g++ 2>/dev/null)" \
         "$(readlink -f /usr/bin/cc 2>/dev/null)" "$(readlink -f /usr/bin/c++ 2>/dev/null)" \
         "$(command -v cmake || true)" "$(command -v ninja || true)" "$(command -v nvcc || true)"; do
  [ -n "$p" ] && [ -e "$p" ] || continue
  p=$(readlink -f "$p")
  case $p in /usr/local/*) ;; *) hide+=("$p") ;; esac  # /usr/local goes whole
done
printf '%s\n' "${hide[@]}" | sort -u > "$work/hide"
cp "$whl" "$nvrtc_whl" "$work/"

cat > "$work/sandbox.sh" <<'SANDBOX'
set -euo pipefail
work=$1 py=$2
mount -t tmpfs none /usr/local  # the CUDA toolkit (NVRTC, nvcc, headers) and anything else there
while read -r p; do
  if [ -d "$p" ]; then mount -t tmpfs none "$p"; else mount --bind /dev/null "$p"; fi
done < "$work/hide"
for p in /usr/local/cuda/include/cuda.h /usr/include/sqlite3.h /usr/include/boost/version.hpp; do
  [ -s "$p" ] && { echo "wheel.sh: $p is still visible" >&2; exit 1; }
done
"$py" -m venv "$work/venv"
v=$work/venv/bin
"$v/python" -m pip install --quiet --no-index --no-deps "$work"/reduce_tune-*.whl
cd "$work"
"$v/python" - <<'PY'
import os, pathlib, subprocess, sys
import reduce_tune as rt
from reduce_tune import _ext
pkg = pathlib.Path(rt.__file__).parent
assert "site-packages" in pkg.parts, pkg
ok, why = rt.gpu_available()
assert ok is False and why, (ok, why)
print(f"reduce_tune {rt.__version__} from {pkg}: gpu_available() = {(ok, why)}")
for f in (pathlib.Path(_ext.__file__), pkg / "bin" / "reduce-tune"):
    ldd = subprocess.run(["ldd", str(f)], capture_output=True, text=True).stdout
    needed = [l.split()[-1].strip("[]") for l in
              subprocess.run(["readelf", "-d", str(f)], capture_output=True, text=True).stdout.splitlines()
              if "(NEEDED)" in l]
    print(f"{f.name} needs {' '.join(needed)}")
    bad = [l.strip() for l in ldd.splitlines() if any(k in l for k in ("sqlite", "boost", "libcuda", "nvrtc", "not found"))]
    assert not bad, f"{f.name}: {bad}"
try:
    rt.nvrtc_info()
    raise AssertionError("an NVRTC loaded where none should be")
except RuntimeError as e:
    assert "nvidia-cuda-nvrtc" in str(e), e
    print(f"no NVRTC: {str(e)[:120]}...")
PY
"$v/reduce-tune" --help > /dev/null
"$v/python" -m pip install --quiet --no-index --no-deps "$work"/nvidia_cuda_nvrtc-*.whl
"$v/python" - <<'PY'
import pathlib, sys
import reduce_tune as rt
info = rt.nvrtc_info("sm_90")
path = pathlib.Path(info["path"])
assert path.is_relative_to(pathlib.Path(sys.prefix).resolve()) and "nvidia" in path.parts, path
assert info["compiled_bytes"] > 0 and 90 in info["archs"], info
print(f"NVRTC {info['version'][0]}.{info['version'][1]} from the nvidia-cuda-nvrtc wheel: {path}; "
      f"a kernel for sm_90: {info['compiled_bytes']} bytes")
PY
SANDBOX
unshare --map-root-user --mount --net bash "$work/sandbox.sh" "$work" "$py"
echo "wheel.sh: $(basename "$whl") installs and works without the build dependencies"
