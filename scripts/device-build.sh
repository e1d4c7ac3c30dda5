#!/usr/bin/env bash
# Builds reduce-tune for the lent GPU machine (Ubuntu 24.04, no Boost libraries, no SQLite headers,
# no package registries) on this machine: Boost.Program_options and SQLite linked statically,
# NVRTC and the driver opened at run time. The result, build-device/, is carried by the device call
# (it is listed in .git/info/exclude). See shared/DEVICE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx 'build\*/' .git/info/exclude 2>/dev/null || echo 'build*/' >> .git/info/exclude
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDUCE_TUNE_STATIC_DEPS=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libgcc" >/dev/null
cmake --build build-device -j"$(nproc)"
# The bench program needs nvcc and CUB: it is built on the GPU machine by scripts/device-check.sh.
du -sh build-device | cut -f1
