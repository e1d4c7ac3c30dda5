#!/usr/bin/env bash
# The segmented benchmark on a GPU host, after a build with the benchmarks (scripts/portable-build.sh
# or any build with nvcc found):
#   1. BUILD_DIR/bench/reduce_bench_segmented: reduce-tune vs CUB vs the ceiling, checked;
#   2. bench/frameworks_segmented.py: torch and CuPy on the same shapes (skipped without torch);
#   3. bench/plot_segmented.sh: GB/s against row length, if gnuplot is there (else plot the CSVs
#      elsewhere: bench/plot_segmented.sh OUT.png CSV...).
# Writes to OUTDIR: segmented.{md,csv,err}, frameworks_segmented.{md,csv,err}, segmented.png;
# prints the targets and the summaries last.
# Usage: scripts/gpu-bench-segmented.sh OUTDIR [BUILD_DIR] [reduce_bench_segmented options, e.g. --quick]
#   BUILD_DIR defaults to build-portable. The grid options (--quick --problems --dtypes --ops
#   --totals --lengths --reps --warmup --budget-s --seed) go to the torch script too.
#   REDUCE_TUNE_DB names the tuning store.
# Exit code: 0 all checks passed, 1 a result FAILED, 2 no CUDA device or bad usage, 3 error.
set -uo pipefail
[ $# -ge 1 ] || { sed -n 2,14p "$0" >&2; exit 2; }
mkdir -p "$1" || exit 3
OUTDIR=$(cd "$1" && pwd)
shift
B=build-portable
if [ $# -gt 0 ]; then
  case $1 in -*) ;; *) B=$1; shift ;; esac
fi
[ "${B#/}" != "$B" ] || { [ -d "$B" ] && B=$(cd "$B" && pwd); }
cd "$(dirname "$0")/.." || exit 3
bin=$B/bench/reduce_bench_segmented
if [ ! -x "$bin" ]; then
  echo "gpu-bench-segmented.sh: $bin not found: build with the benchmarks first (scripts/portable-build.sh)" >&2
  exit 3
fi

# The options both programs take, with their values.
py_args=()
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  a=${args[i]}
  case $a in
  --quick) py_args+=("$a") ;;
  --problems=* | --dtypes=* | --ops=* | --totals=* | --lengths=* | --reps=* | --warmup=* | --budget-s=* | --seed=*)
    py_args+=("$a") ;;
  --problems | --dtypes | --ops | --totals | --lengths | --reps | --warmup | --budget-s | --seed)
    py_args+=("$a" "${args[i + 1]:-}")
    i=$((i + 1)) ;;
  esac
done

t0=$(date +%s)
"$bin" --csv "$OUTDIR/segmented.csv" "$@" >"$OUTDIR/segmented.md" 2>"$OUTDIR/segmented.err"
rc_bench=$?
t1=$(date +%s)
python3 bench/frameworks_segmented.py "${py_args[@]}" --csv "$OUTDIR/frameworks_segmented.csv" \
  --rt-csv "$OUTDIR/segmented.csv" >"$OUTDIR/frameworks_segmented.md" 2>"$OUTDIR/frameworks_segmented.err"
rc_fw=$?
t2=$(date +%s)

rc_plot=skipped
if command -v gnuplot >/dev/null; then
  csvs=("$OUTDIR/segmented.csv")
  [ -s "$OUTDIR/frameworks_segmented.csv" ] && csvs+=("$OUTDIR/frameworks_segmented.csv")
  # The totals that ran, up to three of the largest.
  ns=$(awk -F, '!/^#/ && $1 != "problem" { print $7 }' "${csvs[@]}" | sort -n -u | tail -3 | paste -sd,)
  if [ -n "$ns" ]; then
    bench/plot_segmented.sh -n "$ns" "$OUTDIR/segmented.png" "${csvs[@]}" >/dev/null 2>"$OUTDIR/plot.err"
    rc_plot=$?
    bench/plot_segmented.sh -L -n "$ns" "$OUTDIR/segmented-log.png" "${csvs[@]}" >/dev/null 2>>"$OUTDIR/plot.err"
  fi
fi

sed -n '/^### Targets/,$p' "$OUTDIR/segmented.md"
grep -h '^FAILED\|^error' "$OUTDIR/segmented.md" | head -20
grep -h 'FAILED' "$OUTDIR/frameworks_segmented.md" | head -10
tail -n 1 "$OUTDIR/frameworks_segmented.md"
echo "gpu-bench-segmented.sh: reduce_bench_segmented exit $rc_bench ($((t1 - t0)) s)," \
  "frameworks_segmented.py exit $rc_fw ($((t2 - t1)) s; 4 = no torch), plot $rc_plot"
if [ "$rc_bench" -eq 1 ] || [ "$rc_fw" -eq 1 ]; then exit 1; fi
if [ "$rc_bench" -ne 0 ]; then exit "$rc_bench"; fi
if [ "$rc_fw" -ne 0 ] && [ "$rc_fw" -ne 4 ]; then exit 3; fi
exit 0
