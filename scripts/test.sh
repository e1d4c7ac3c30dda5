#!/usr/bin/env bash
# Sets up, builds and runs every test (CTest). GPU tests run where a GPU is present and are
# reported as skipped, with the reason, where there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
# CTest does not show a skipped test's output: say up front why GPU tests will be skipped, if so.
./tests/reduce_tune_gpu_tests "no test has this name" 2>&1 | grep -m1 SKIPPED || true
ctest --output-on-failure -j"$(nproc)" "$@"
