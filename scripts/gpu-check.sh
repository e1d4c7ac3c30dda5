#!/usr/bin/env bash
# The whole check of a build on a GPU host, in one run: CPU and GPU tests; with the full check
# (the default) also fault/hang/kill/resume, the default sweep with a cold and a warm compile
# cache and in process, the course material's own tables, the installed-package examples, min/max
# and other-dtype sweeps, and the benchmarks (bench/run.sh, the two-pass launch comparison, the
# finishes probe, ncu where it is installed). Every log is written to OUTDIR; a short summary is
# printed last and written to OUTDIR/summary.txt.
#   usage: scripts/gpu-check.sh [--quick] [--extra CMD]... OUTDIR [BUILD_DIR]
#     BUILD_DIR   a build with the benchmarks (default: build-portable, from scripts/portable-build.sh)
#     --quick     CPU and GPU tests and a sweep of two sizes only (about a minute on an H100)
#     --extra CMD one more shell command run last, from the repository root, its output logged
# Caches and the stores it writes: REDUCE_TUNE_CACHE=/tmp/rt-cache, the stores inside OUTDIR.
set -uo pipefail
usage() { sed -n 2,12p "$0" >&2; exit 2; }
mode=full
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) mode=quick; shift ;;
    --full) mode=full; shift ;;
    --extra) [ $# -ge 2 ] || usage; extra+=("$2"); shift 2 ;;
    -h|--help) usage ;;
    -*) echo "gpu-check.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || usage
mkdir -p "$1" || exit 3
L=$(cd "$1" && pwd)
B=${2:-build-portable}
[ "${B#/}" != "$B" ] || { [ -d "$B" ] && B=$(cd "$B" && pwd); }
cd "$(dirname "$0")/.." || exit 3
[ -x "$B/reduce-tune" ] || { echo "gpu-check.sh: no $B/reduce-tune: build it first (scripts/portable-build.sh)" >&2; exit 3; }
export REDUCE_TUNE_CACHE=${REDUCE_TUNE_CACHE:-/tmp/rt-cache} REDUCE_TUNE_DB="$L/tuning.db"
summary=()
note() { summary+=("$*"); echo "== $*"; }
print_summary() {
  echo
  echo "===================== summary ====================="
  printf '%s\n' "${summary[@]}" | tee "$L/summary.txt"
}
# Stopped by a time limit (timeout -s TERM): the summary of what ran; the logs are in OUTDIR.
trap 'note "stopped by SIGTERM"; print_summary; exit 124' TERM
since() { echo $(( $(date +%s) - $1 )); }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$L/gpu.txt" 2>&1
note "gpu: $(head -1 "$L/gpu.txt")"
$B/reduce-tune devices > "$L/devices.txt" 2>&1

$B/tests/reduce_tune_tests "~[nvrtc]" > "$L/cpu-tests.log" 2>&1
note "cpu tests: $(tail -2 "$L/cpu-tests.log" | tr '\n' ' ')"
t0=$(date +%s)
$B/tests/reduce_tune_gpu_tests > "$L/gpu-tests.log" 2>&1
note "gpu tests ($(since $t0) s): $(tail -2 "$L/gpu-tests.log" | tr '\n' ' ')"

if [ "$mode" = quick ]; then
  $B/reduce-tune --device 0 --sizes 2^20,2^24 > "$L/sweep-quick.md" 2> "$L/sweep-quick.err"
  note "quick sweep exit $?: $(grep -E 'run [0-9]+|wall time' "$L/sweep-quick.err" | tr '\n' ' ')"
else
  t0=$(date +%s)
  bash tests/gpu_resilience.sh $B/reduce-tune /tmp/rt-resilience > "$L/resilience.log" 2>&1
  note "resilience exit $? ($(since $t0) s): $(grep -c '^ok' "$L/resilience.log") ok, $(grep -c '^FAIL' "$L/resilience.log") FAIL; $(grep 'best configuration' "$L/resilience.log")"
  rm -rf "$REDUCE_TUNE_CACHE"
  $B/reduce-tune --device 0 > "$L/sweep.md" 2> "$L/sweep.err"
  note "default sweep, empty cache, exit $?: $(grep -E 'run [0-9]+|wall time' "$L/sweep.err" | tr '\n' ' ')"
  REDUCE_TUNE_DB="$L/tuning-warm.db" $B/reduce-tune --device 0 > "$L/sweep-warm.md" 2> "$L/sweep-warm.err"
  note "default sweep, warm cache, exit $?: $(grep -E 'wall time' "$L/sweep-warm.err")"
  $B/reduce-tune --device 0 --material 000 --dtypes int32 --sizes 2^24 > "$L/material-000.md" 2> "$L/material-000.err"
  note "material 000 int32 2^24 exit $?"
  $B/reduce-tune --device 0 --material 004 --dtypes float32 --sizes 2^28 > "$L/material-004.md" 2> "$L/material-004.err"
  note "material 004 float32 2^28 exit $?"
  $B/tests/install_consumer/build/sum > "$L/example.log" 2>&1
  note "examples/sum (installed package, find_package) exit $?: $(tail -2 "$L/example.log" | tr '\n' ' ')"
  if [ -x $B/tests/install_consumer/build/sum_cuda ]; then
    $B/tests/install_consumer/build/sum_cuda > "$L/example-cuda.log" 2>&1
    note "examples/sum/sum_cuda.cu (nvcc, default standard) exit $?: $(tail -2 "$L/example-cuda.log" | tr '\n' ' ')"
  fi
  REDUCE_TUNE_DB="$L/tuning-inproc.db" $B/reduce-tune tune --device 0 --in-process > "$L/sweep-inproc.md" 2> "$L/sweep-inproc.err"
  note "default sweep, warm cache, in process (where the time goes), exit $?: $(grep -E 'wall time' "$L/sweep-inproc.err")"
  # The bench's other problems: min/max of every dtype and the other dtypes' sums, vectorized and streaming.
  sizes='2^10,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28'
  $B/reduce-tune --device 0 --variants vectorized,streaming --dtypes int32,uint32,int64,float32,float64 \
    --ops min,max --sizes "$sizes" > "$L/sweep-minmax.md" 2> "$L/sweep-minmax.err"
  note "min/max sweep exit $?: $(grep -E 'run [0-9]+|wall time' "$L/sweep-minmax.err" | tr '\n' ' ')"
  $B/reduce-tune --device 0 --variants vectorized,streaming --dtypes uint32,int64,float64 --ops sum \
    --sizes "$sizes" > "$L/sweep-dtypes.md" 2> "$L/sweep-dtypes.err"
  note "uint32/int64/float64 sum sweep exit $?: $(grep -E 'run [0-9]+|wall time' "$L/sweep-dtypes.err" | tr '\n' ' ')"
  if [ -x bench/run.sh ] && [ -x $B/bench/reduce_bench ]; then
    t0=$(date +%s)
    bench/run.sh "$B" > "$L/bench.md" 2> "$L/bench.err"
    note "bench exit $? ($(since $t0) s): $(tail -4 "$L/bench.md" | tr '\n' ' ')"
  fi
  if [ -x $B/bench/reduce_bench ]; then
    bench/twopass-pdl.sh "$B" > "$L/twopass-pdl.md" 2> "$L/twopass-pdl.err"
    note "two-pass finish, programmatic vs plain launch, exit $?: $(grep -c '^| [0-9]' "$L/twopass-pdl.md") sizes"
  fi
  if [ -x $B/bench/probe_finishes ]; then
    # The finishes' init costs: the memset, none, the first-block finish (bench/probes/finishes.cu).
    $B/bench/probe_finishes self > "$L/probe-finishes-self.txt" 2>&1
    note "probe_finishes self exit $?"
  fi
  if command -v ncu > /dev/null && [ -x $B/bench/reduce_bench ]; then
    # Kernel-level profile of the three contestants (caches flushed and invalidated by ncu).
    ncu --clock-control none --cache-control all --kernel-name 'regex:rt_reduce|Reduce|ceiling' \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
      $B/bench/reduce_bench --dtypes int32,float32 --sizes 2^16,2^20,2^22 --reps 1 --warmup 0 \
      --cold-only --no-overhead > "$L/ncu.txt" 2>&1
    note "ncu exit $?"
  fi
fi
for step in ${extra[@]+"${extra[@]}"}; do
  t0=$(date +%s)
  bash -c "$step" > "$L/extra-$(echo "$step" | tr -c 'a-zA-Z0-9' _ | cut -c1-40).log" 2>&1
  note "extra '$step' exit $? ($(since $t0) s)"
done
print_summary
