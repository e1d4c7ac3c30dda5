#!/usr/bin/env bash
# A portable build of reduce-tune, for GPU hosts that have the NVIDIA driver but no build tools,
# Boost libraries or SQLite headers: built on a machine that has them (the CUDA toolkit, CMake,
# Ninja, Boost.Program_options and SQLite's static archive), with Boost.Program_options and SQLite
# linked statically, libgcc statically, the CUDA runtime of the benchmarks statically, and NVRTC
# and the driver (libcuda.so.1) opened at run time. Copy the checkout with the build folder to the
# GPU host and run scripts/gpu-check.sh there. NVRTC (any CUDA 11.2+ one) is found at run time by
# $REDUCE_TUNE_NVRTC or --nvrtc, else by the soname of the build's toolkit on the library path or
# in that toolkit's folder.
#   usage: scripts/portable-build.sh [BUILD_DIR [TARGET...]]   (default: build-portable, every target)
#   With TARGETs, only those are built (e.g. reduce-tune tests/reduce_tune_gpu_tests) and the
#   install consumer is not.
# Also builds the benchmarks (bench/, where nvcc is found; CUB from CCCL 3.6, fetched below) and
# the install + find_package consumer (examples/sum), which gpu-check.sh runs.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-portable}
[ $# -gt 0 ] && shift
targets=("$@")
# .gitignore lists build*/ too; the exclude entry keeps the build folder untracked in checkouts
# whose .gitignore does not. In a worktree .git is a file and the exclude file lives in the common
# git directory; a fresh clone may have no info/ directory at all.
if exclude=$(git rev-parse --git-path info/exclude 2>/dev/null); then
  mkdir -p "$(dirname "$exclude")"
  grep -qx 'build\*/' "$exclude" 2>/dev/null || echo 'build*/' >> "$exclude"
fi
export CUDACXX=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
# CUB for the benchmarks: CCCL 3.6's headers, from PyPI's cuda-cccl wheel (1.2.1 carries CCCL
# 3.6.0 under cuda/cccl/headers/include), downloaded once into $REDUCE_TUNE_CCCL_CACHE and
# unpacked there. Only the compiler reads them: nothing of them goes to the GPU host. The wheel's
# tags are fixed, so any python3 with pip fetches the same file. REDUCE_TUNE_CCCL_INCLUDE=DIR takes
# the headers in DIR instead, =toolkit the CUDA toolkit's CCCL.
cccl=${REDUCE_TUNE_CCCL_INCLUDE:-}
if [ -z "$cccl" ]; then
  cache=${REDUCE_TUNE_CCCL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reduce-tune/cuda-cccl-1.2.1}
  cccl=$cache/cuda/cccl/headers/include
  if [ ! -f "$cccl/cub/version.cuh" ]; then
    mkdir -p "$cache"
    if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --implementation cp \
        --python-version 3.11 --platform manylinux_2_26_x86_64 -d "$cache/wheel" cuda-cccl==1.2.1; then
      echo "portable-build.sh: cannot download cuda-cccl 1.2.1 (CCCL 3.6); set REDUCE_TUNE_CCCL_INCLUDE" \
           "to a folder of CCCL headers, or to 'toolkit' for the CUDA toolkit's CCCL" >&2
      exit 1
    fi
    python3 - "$cache" <<'EOF'
import glob, os, shutil, sys, zipfile
cache = sys.argv[1]
wheel = sorted(glob.glob(os.path.join(cache, "wheel", "cuda_cccl-*.whl")))[-1]
part = os.path.join(cache, "unpacking")
shutil.rmtree(part, ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    z.extractall(part, [n for n in z.namelist() if n.startswith("cuda/cccl/headers/include/")])
shutil.rmtree(os.path.join(cache, "cuda"), ignore_errors=True)
os.rename(os.path.join(part, "cuda"), os.path.join(cache, "cuda"))  # whole or not at all
os.rmdir(part)
EOF
  fi
  if ! grep -q '^#define CCCL_VERSION 3006' "$cccl/cuda/std/__cccl/version.h"; then
    echo "portable-build.sh: $cccl holds no CCCL 3.6" >&2
    exit 1
  fi
fi
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDUCE_TUNE_STATIC_DEPS=ON \
  -DREDUCE_TUNE_BUILD_BENCH=ON -DREDUCE_TUNE_CCCL_INCLUDE="$cccl" \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libgcc" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$B" -j"$(nproc)" --target "${targets[@]}"
else
  cmake --build "$B" -j"$(nproc)"
  (cd "$B" && ctest -R install_consumer_build --output-on-failure >/dev/null)
fi
du -sh "$B" | cut -f1
