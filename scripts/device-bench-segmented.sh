#!/usr/bin/env bash
# The segmented benchmark of issue 15 on the lent GPU machine, after scripts/device-build.sh
# built build-device/ on the CPU machine (the device call carries it: carry=["build-device"]):
#   1. build-device/bench/reduce_bench_segmented: reduce-tune vs CUB vs the ceiling, checked;
#   2. bench/frameworks_segmented.py: torch and CuPy on the same shapes (skipped without torch);
#   3. bench/plot_segmented.sh: GB/s against row length, if gnuplot is there (else plot the
#      returned CSVs on the CPU machine: bench/plot_segmented.sh OUT.png CSV...).
# Writes to $OUT (default ./out-segmented): segmented.{md,csv,err}, frameworks_segmented.{md,csv,err},
# segmented.png; prints the targets and the summaries last.
# Usage: scripts/device-bench-segmented.sh [reduce_bench_segmented options, e.g. --quick]
#   The grid options (--quick --problems --dtypes --ops --totals --lengths --reps --warmup
#   --budget-s --seed) go to the torch script too. REDUCE_TUNE_DB names the tuning store.
# Exit code: 0 all checks passed, 1 a result FAILED, 2 no CUDA device, 3 error.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out-segmented}
mkdir -p "$OUT"
bin=${B:-build-device}/bench/reduce_bench_segmented
if [ ! -x "$bin" ]; then
  echo "device-bench-segmented.sh: $bin not found: run scripts/device-build.sh first and carry build-device" >&2
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
"$bin" --csv "$OUT/segmented.csv" "$@" >"$OUT/segmented.md" 2>"$OUT/segmented.err"
rc_bench=$?
t1=$(date +%s)
python3 bench/frameworks_segmented.py "${py_args[@]}" --csv "$OUT/frameworks_segmented.csv" \
  --rt-csv "$OUT/segmented.csv" >"$OUT/frameworks_segmented.md" 2>"$OUT/frameworks_segmented.err"
rc_fw=$?
t2=$(date +%s)

rc_plot=skipped
if command -v gnuplot >/dev/null; then
  csvs=("$OUT/segmented.csv")
  [ -s "$OUT/frameworks_segmented.csv" ] && csvs+=("$OUT/frameworks_segmented.csv")
  # The totals that ran, up to three of the largest.
  ns=$(awk -F, '!/^#/ && $1 != "problem" { print $7 }' "${csvs[@]}" | sort -n -u | tail -3 | paste -sd,)
  if [ -n "$ns" ]; then
    bench/plot_segmented.sh -n "$ns" "$OUT/segmented.png" "${csvs[@]}" >/dev/null 2>"$OUT/plot.err"
    rc_plot=$?
    bench/plot_segmented.sh -L -n "$ns" "$OUT/segmented-log.png" "${csvs[@]}" >/dev/null 2>>"$OUT/plot.err"
  fi
fi

sed -n '/^### Targets/,$p' "$OUT/segmented.md"
grep -h '^FAILED\|^error' "$OUT/segmented.md" | head -20
grep -h 'FAILED' "$OUT/frameworks_segmented.md" | head -10
tail -n 1 "$OUT/frameworks_segmented.md"
echo "device-bench-segmented.sh: reduce_bench_segmented exit $rc_bench ($((t1 - t0)) s)," \
  "frameworks_segmented.py exit $rc_fw ($((t2 - t1)) s; 4 = no torch), plot $rc_plot"
if [ "$rc_bench" -eq 1 ] || [ "$rc_fw" -eq 1 ]; then exit 1; fi
if [ "$rc_bench" -ne 0 ]; then exit "$rc_bench"; fi
if [ "$rc_fw" -ne 0 ] && [ "$rc_fw" -ne 4 ]; then exit 3; fi
exit 0
