#!/usr/bin/env bash
# Builds reduce-tune for the lent GPU machine (Ubuntu 24.04, no Boost libraries, no SQLite headers,
# no package registries) on this machine: Boost.Program_options and SQLite linked statically,
# NVRTC and the driver opened at run time. The result, build-device/, is carried by the device call
# (it is listed in the git exclude file). See shared/DEVICE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# .gitignore lists build*/ too; the exclude entry keeps build-device/ out of the device call's copy
# in checkouts whose .gitignore does not. In a worktree .git is a file and the exclude file lives
# in the common git directory; a fresh clone may have no info/ directory at all.
if exclude=$(git rev-parse --git-path info/exclude 2>/dev/null); then
  mkdir -p "$(dirname "$exclude")"
  grep -qx 'build\*/' "$exclude" 2>/dev/null || echo 'build*/' >> "$exclude"
fi
# The bench (bench/reduce_bench: nvcc, CUB, static cudart) is built here too and carried with
# the rest; bench/run.sh runs it there.
export CUDACXX=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDUCE_TUNE_STATIC_DEPS=ON \
  -DREDUCE_TUNE_BUILD_BENCH=ON -DCMAKE_EXE_LINKER_FLAGS="-static-libgcc" >/dev/null
cmake --build build-device -j"$(nproc)"
# The install + find_package consumer (examples/sum), built here; scripts/device-check.sh runs it.
(cd build-device && ctest -R install_consumer_build --output-on-failure >/dev/null)
du -sh build-device | cut -f1
