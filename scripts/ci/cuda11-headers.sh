#!/usr/bin/env bash
# CI: the code that includes <cuda.h> or <nvrtc.h> must build against CUDA 11.x-era headers too
# (README: any CUDA 11.2+ NVRTC; the driver table in kernels/driver.h takes its symbol names from
# the cuda.h it is built with). Syntax-checks every C++ source with the CUDA 11.8 headers of the
# PyPI wheels nvidia-cuda-runtime-cu11 (cuda.h) and nvidia-cuda-nvrtc-cu11 (nvrtc.h) in place of
# the toolkit's. Needs no build; the wheels go to .dev/ (git-ignored).
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore # CI runs as root; the wheels go to a private folder
cd "$(dirname "$0")/../.."
dev=$PWD/.dev
inc=$dev/cuda11-headers
if [ ! -f "$inc/.installed" ]; then
  rm -rf "$inc"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$inc" \
    "nvidia-cuda-runtime-cu11==11.8.89" "nvidia-cuda-nvrtc-cu11==11.8.89"
  touch "$inc/.installed"
fi
cuda_inc=$inc/nvidia/cuda_runtime/include
nvrtc_inc=$inc/nvidia/cuda_nvrtc/include
grep -q 'define CUDA_VERSION 11080' "$cuda_inc/cuda.h"
grep -q 'nvrtcGetCUBIN' "$nvrtc_inc/nvrtc.h"

# Every source of the library and the CLI that sees a CUDA header, directly or through ours.
mapfile -t sources < <(grep -l -E '#include [<"](cuda|nvrtc)\.h[>"]|#include "kernels/(driver|nvrtc|runner)\.h"|#include "reduce_tune/reducer\.h"|#include "runtime/capture\.h"' \
  kernels/*.cpp runtime/*.cpp tuner/*.cpp 2>/dev/null | sort)
failed=0
t0=$(date +%s)
for f in "${sources[@]}"; do
  # -isystem before the toolkit: the 11.8 headers win; -nostdinc++ is not needed.
  if ! g++ -std=c++20 -fsyntax-only -Wall -Wextra -Iinclude -I. -isystem "$cuda_inc" -isystem "$nvrtc_inc" "$f"; then
    echo "cuda11-headers: $f does not build with the CUDA 11.8 headers" >&2
    failed=$((failed + 1))
  fi
done
echo "cuda11-headers: ${#sources[@]} sources checked against CUDA 11.8 cuda.h/nvrtc.h in $(( $(date +%s) - t0 )) s, $failed failed"
[ "$failed" -eq 0 ]
