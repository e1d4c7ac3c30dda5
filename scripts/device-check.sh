#!/usr/bin/env bash
# The whole check on the lent GPU machine in one call (device time is short): GPU tests, the CPU
# tests, a sweep, and (full) the benchmarks. Logs go to $OUT (they come back); a summary is printed
# last. Usage, from the repository root on the GPU machine, after scripts/device-build.sh here:
#   scripts/device-check.sh quick|full
set -uo pipefail
mode=${1:-quick}
OUT=${OUT:-/tmp/rt-out}
mkdir -p "$OUT"
B=build-device
export REDUCE_TUNE_CACHE=/tmp/rt-cache REDUCE_TUNE_DB="$OUT/tuning.db"
summary=()
note() { summary+=("$*"); echo "== $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$OUT/gpu.txt" 2>&1
note "gpu: $(head -1 "$OUT/gpu.txt")"
$B/reduce-tune devices 2>&1 | tee "$OUT/devices.txt"

$B/tests/reduce_tune_tests "~[nvrtc]" > "$OUT/cpu-tests.log" 2>&1
note "cpu tests: $(tail -2 "$OUT/cpu-tests.log" | tr '\n' ' ')"
t0=$(date +%s)
$B/tests/reduce_tune_gpu_tests > "$OUT/gpu-tests.log" 2>&1
note "gpu tests ($(( $(date +%s) - t0 )) s): $(tail -2 "$OUT/gpu-tests.log" | tr '\n' ' ')"

if [ "$mode" = quick ]; then
  $B/reduce-tune --device 0 --sizes 2^20,2^24 > "$OUT/sweep-quick.md" 2> "$OUT/sweep-quick.err"
  note "quick sweep exit $?: $(grep -E 'wall time|failed the check' "$OUT/sweep-quick.err" | tr '\n' ' ')"
else
  rm -rf /tmp/rt-cache
  $B/reduce-tune --device 0 > "$OUT/sweep.md" 2> "$OUT/sweep.err"
  note "default sweep, empty cache, exit $?: $(grep -E 'wall time|failed the check' "$OUT/sweep.err" | tr '\n' ' ')"
  REDUCE_TUNE_DB="$OUT/tuning-warm.db" $B/reduce-tune --device 0 > "$OUT/sweep-warm.md" 2> "$OUT/sweep-warm.err"
  note "default sweep, warm cache, exit $?: $(grep -E 'wall time' "$OUT/sweep-warm.err")"
  if [ -x bench/run.sh ]; then
    bench/run.sh "$B" > "$OUT/bench.md" 2> "$OUT/bench.err"
    note "bench exit $?: $(tail -3 "$OUT/bench.md" | tr '\n' ' ')"
  fi
fi
echo
echo "===================== summary ====================="
printf '%s\n' "${summary[@]}"
grep -E "FAILED|failed" "$OUT/gpu-tests.log" | head -20
