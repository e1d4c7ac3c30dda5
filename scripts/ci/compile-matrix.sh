#!/usr/bin/env bash
# CI: compile every valid configuration of the default problem set (int32 and float32 sum) for one
# architecture of each code path the templates take (Kepler, Maxwell, sm_60 double atomics, sm_70
# independent thread scheduling and 16-bit CAS, sm_80 redux and bf16 conversion, sm_90
# programmatic launch, Blackwell), each with an NVRTC that targets it. The siblings that take the
# same paths (sm_37 sm_52 sm_61 sm_75 sm_86 sm_89) are left out to keep CI under 45 minutes on two
# cores; sm_75 and sm_90 are compiled in full by the CTest suite anyway. ALL=1 compiles every one.
#   NVRTC 11.8 (PyPI nvidia-cuda-nvrtc-cu11): sm_35 sm_50 sm_60 sm_70
#   NVRTC 12.x (PyPI nvidia-cuda-nvrtc-cu12): sm_80 sm_90
#   NVRTC 13.x (the toolkit this is built with): sm_100 sm_120
# Any failed compile fails CI. The wheels go to .dev/ (git-ignored; no root needed); so do
# cuobjdump and nvdisasm, which tests/test_cubin.cpp uses to check instruction counts exactly.
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore # CI runs as root; the wheels go to a private folder
cd "$(dirname "$0")/../.."
root=$PWD
dev=$root/.dev
mkdir -p "$dev"

pip_install() { # target-dir requirement
  [ -f "$1/.installed-$2" ] && return 0
  rm -rf "$1"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$1" "$2"
  touch "$1/.installed-$2"
}
pip_install "$dev/nvrtc-cu11" "nvidia-cuda-nvrtc-cu11==11.8.89"
pip_install "$dev/nvrtc-cu12" "nvidia-cuda-nvrtc-cu12==12.9.86"
pip_install "$dev/cuda-tools" "nvidia-cuda-cuobjdump==13.5.37" 2>/dev/null || echo "note: cuobjdump wheel not installed"
pip_install "$dev/cuda-tools-nvdisasm" "nvidia-cuda-nvdisasm==13.5.37" 2>/dev/null || echo "note: nvdisasm wheel not installed"
# One bin directory for both tools (cuobjdump finds nvdisasm beside it or on PATH).
if [ -x "$dev/cuda-tools-nvdisasm/nvidia/cu13/bin/nvdisasm" ] && [ -d "$dev/cuda-tools/nvidia/cu13/bin" ]; then
  ln -sf "$dev/cuda-tools-nvdisasm/nvidia/cu13/bin/nvdisasm" "$dev/cuda-tools/nvidia/cu13/bin/nvdisasm"
fi

lib11=$dev/nvrtc-cu11/nvidia/cuda_nvrtc/lib
lib12=$dev/nvrtc-cu12/nvidia/cuda_nvrtc/lib
[ -f "$lib11/libnvrtc.so.11.2" ] || { echo "compile-matrix: $lib11/libnvrtc.so.11.2 missing" >&2; exit 1; }
[ -f "$lib12/libnvrtc.so.12" ] || { echo "compile-matrix: $lib12/libnvrtc.so.12 missing" >&2; exit 1; }

# REDUCE_TUNE_CLI: an already built reduce-tune (else scripts/setup.sh builds build/).
cli=${REDUCE_TUNE_CLI:-}
if [ -z "$cli" ]; then
  scripts/setup.sh >/dev/null
  cli=$root/build/reduce-tune
fi
cuda_lib=$(dirname "$(readlink -f /usr/local/cuda/lib64/libnvrtc.so 2>/dev/null || echo /usr/local/cuda/lib64/x)")

failed=0
start_all=$(date +%s)
run_arch() { # libdir nvrtc arch...
  local libdir=$1 lib=$2
  shift 2
  for arch in "$@"; do
    local t0 out rc ms
    t0=$(date +%s%N)
    set +e
    # LD_LIBRARY_PATH: libnvrtc loads its libnvrtc-builtins from the same wheel.
    out=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$cli" compile --arch "$arch" \
          ${lib:+--nvrtc "$lib"} --quiet 2>&1)
    rc=$?
    set -e
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf '%-7s %4d.%d s  %s\n' "$arch" $((ms / 1000)) $((ms % 1000 / 100)) "$(echo "$out" | tail -1)"
    if [ $rc -ne 0 ]; then
      failed=$((failed + 1))
      echo "$out" | head -100
    fi
  done
}
if [ "${ALL:-0}" = 1 ]; then
  run_arch "$lib11" "$lib11/libnvrtc.so.11.2" sm_35 sm_37 sm_50 sm_52 sm_60 sm_61 sm_70 sm_75
  run_arch "$lib12" "$lib12/libnvrtc.so.12" sm_80 sm_86 sm_89 sm_90
else
  run_arch "$lib11" "$lib11/libnvrtc.so.11.2" sm_35 sm_50 sm_60 sm_70
  run_arch "$lib12" "$lib12/libnvrtc.so.12" sm_80 sm_90
fi
run_arch "$cuda_lib" "" sm_100 sm_120
echo "compile matrix: its architectures in $(( $(date +%s) - start_all )) s, $failed failed"
[ "$failed" -eq 0 ]
