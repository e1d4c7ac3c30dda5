#!/usr/bin/env bash
# A portable build of reduce-tune, for GPU hosts that have the NVIDIA driver but no build tools,
# Boost libraries or SQLite headers: built on a machine that has them (the CUDA toolkit, CMake,
# Ninja, Boost.Program_options and SQLite's static archive), with Boost.Program_options and SQLite
# linked statically, libgcc statically, the CUDA runtime of the benchmarks statically, and NVRTC
# and the driver (libcuda.so.1) opened at run time. Copy the checkout with the build folder to the
# GPU host and run scripts/gpu-check.sh there. NVRTC (any CUDA 11.2+ one) is found at run time by
# $REDUCE_TUNE_NVRTC or --nvrtc, else by the soname of the build's toolkit on the library path or
# in that toolkit's folder.
#   usage: scripts/portable-build.sh [BUILD_DIR]   (default: build-portable)
# Also builds the benchmarks (bench/, where nvcc is found) and the install + find_package consumer
# (examples/sum), which gpu-check.sh runs.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-portable}
# .gitignore lists build*/ too; the exclude entry keeps the build folder untracked in checkouts
# whose .gitignore does not. In a worktree .git is a file and the exclude file lives in the common
# git directory; a fresh clone may have no info/ directory at all.
if exclude=$(git rev-parse --git-path info/exclude 2>/dev/null); then
  mkdir -p "$(dirname "$exclude")"
  grep -qx 'build\*/' "$exclude" 2>/dev/null || echo 'build*/' >> "$exclude"
fi
export CUDACXX=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDUCE_TUNE_STATIC_DEPS=ON \
  -DREDUCE_TUNE_BUILD_BENCH=ON -DCMAKE_EXE_LINKER_FLAGS="-static-libgcc" >/dev/null
cmake --build "$B" -j"$(nproc)"
(cd "$B" && ctest -R install_consumer_build --output-on-failure >/dev/null)
du -sh "$B" | cut -f1
