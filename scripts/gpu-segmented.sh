#!/usr/bin/env bash
# The segmented problems on a GPU host in one run: their GPU tests, the default segmented sweep of
# each problem (timed: the target is 120 s or less each on an H100), lookups from the store it
# wrote, and the segmented bench (scripts/gpu-bench-segmented.sh) when it is built. Logs in OUTDIR;
# a summary printed last.
#   usage: scripts/gpu-segmented.sh OUTDIR [BUILD_DIR] [tests|sweep|bench ...]   (default: all three)
# BUILD_DIR: default build-portable (scripts/portable-build.sh). PROBLEMS: the sweeps (default rows
# columns segments); SWEEP_ARGS: more tune options, e.g. --variants segments_binned,segments_merge;
# BENCH_ARGS: the bench's options.
set -uo pipefail
[ $# -ge 1 ] || { sed -n 2,9p "$0" >&2; exit 2; }
mkdir -p "$1" || exit 3
L=$(cd "$1" && pwd)
shift
B=build-portable
if [ $# -gt 0 ]; then
  case $1 in tests|sweep|bench) ;; *) B=$1; shift ;; esac
fi
[ "${B#/}" != "$B" ] || { [ -d "$B" ] && B=$(cd "$B" && pwd); }
cd "$(dirname "$0")/.." || exit 3
export REDUCE_TUNE_CACHE=${REDUCE_TUNE_CACHE:-/tmp/rt-cache} REDUCE_TUNE_DB="$L/segmented.db"
steps=${*:-tests sweep bench}
summary=()
note() { summary+=("$*"); echo "== $*"; }
since() { echo $(( $(date +%s) - $1 )); }
has() { [[ " $steps " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$L/gpu.txt" 2>&1
note "gpu: $(head -1 "$L/gpu.txt")"
if has tests; then
  t0=$(date +%s)
  $B/tests/reduce_tune_gpu_tests "[segmented]" > "$L/gpu-tests-segmented.log" 2>&1
  note "segmented GPU tests exit $? ($(since $t0) s): $(tail -2 "$L/gpu-tests-segmented.log" | tr '\n' ' ')"
  t0=$(date +%s)
  $B/tests/reduce_tune_gpu_tests "~[segmented]" > "$L/gpu-tests-other.log" 2>&1
  note "other GPU tests exit $? ($(since $t0) s): $(tail -2 "$L/gpu-tests-other.log" | tr '\n' ' ')"
fi
if has sweep; then
  for p in ${PROBLEMS:-rows columns segments}; do
    t0=$(date +%s)
    timeout -s INT -k 20 200 $B/reduce-tune tune --device 0 --problem $p ${SWEEP_ARGS:-} > "$L/sweep-$p.md" 2> "$L/sweep-$p.err"
    rc=$?
    note "default $p sweep exit $rc in $(since $t0) s: $(grep -E 'run [0-9]+|wall time' "$L/sweep-$p.err" | tr '\n' ' ' | cut -c1-300)"
  done
  for q in "rows --shape 4096x4096" "rows --shape 2^20x16" "rows --shape 16x2^20" "columns --shape 2^14x1024" \
           "columns --shape 1024x16" "segments --shape 2^16x256"; do
    $B/reduce-tune query --device 0 --problem $q >> "$L/queries.txt" 2>&1
  done
  note "queries: $(wc -l < "$L/queries.txt") lines"
fi
if has bench; then
  # The bench with the store the sweep wrote (REDUCE_TUNE_DB): the tuned library against CUB,
  # torch and the ceiling. BENCH_ARGS narrows it (e.g. --quick).
  t0=$(date +%s)
  scripts/gpu-bench-segmented.sh "$L/bench" "$B" ${BENCH_ARGS:-} > "$L/bench-run.log" 2>&1
  note "segmented bench exit $? ($(since $t0) s): $(grep -iE 'target|worst' "$L/bench-run.log" | head -12 | tr '\n' ' ' | cut -c1-900)"
fi
echo
echo "==== summary"
printf '%s\n' "${summary[@]}" | tee "$L/summary.txt"
