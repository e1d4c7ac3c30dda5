#!/usr/bin/env bash
# How fast reduce-tune is on a GPU by where its tuning comes from, in one run, every result checked
# against the CPU: the 1-D sizes 2^10..2^28 and the segmented grid (rows, columns, offsets at 2^16,
# 2^20 and 2^24 elements), float32 sum, cold L2, with
#   tuned     this GPU's own tuning (--tuned STORE; without it, the shipped rows of this GPU's
#             model, which are that model's own default sweep),
#   shipped   the tuning built into the library, no store of the user's (a fresh install),
#   other     only the tuning of the other GPU models (the shipped rows of this model removed),
#   defaults  no tuning at all (REDUCE_TUNE_SHIPPED_DB empty, no store): the built-in defaults,
# beside CUB and torch. Markdown on stdout: ratios to `tuned` per source and the defaults' targets.
# Usage: bench/portability.sh BUILD_DIR OUTDIR [--tuned STORE] [--quick] [--dtypes LIST]
#   --quick: 1-D sizes up to 2^26, nine row lengths, 10 timed calls a point
# Exit code: 0 every result checked right, 1 a result FAILED its check, 2 no CUDA device, 3 error.
set -uo pipefail
B=${1:?usage: bench/portability.sh BUILD_DIR OUTDIR [--tuned STORE] [--quick]}
O=${2:?usage: bench/portability.sh BUILD_DIR OUTDIR [--tuned STORE] [--quick]}
shift 2
tuned="" quick="" dtypes=float32
while [ $# -gt 0 ]; do
  case $1 in
  --tuned) tuned=$(realpath "$2"); shift 2 ;;
  --quick) quick=1; shift ;;
  --dtypes) dtypes=$2; shift 2 ;;
  *) echo "bench/portability.sh: unknown option $1" >&2; exit 3 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
for b in reduce_bench reduce_bench_segmented; do
  [ -x "$B/bench/$b" ] || { echo "bench/portability.sh: $B/bench/$b not found (REDUCE_TUNE_BUILD_BENCH)" >&2; exit 3; }
done
[ -x "$B/reduce-tune" ] || { echo "bench/portability.sh: $B/reduce-tune not found" >&2; exit 3; }
mkdir -p "$O"
export REDUCE_TUNE_CACHE=${REDUCE_TUNE_CACHE:-$O/cache}
absent="$O/absent.db"
rm -f "$absent"

# This GPU's model, and the shipped tuning without it (the other models' rows only).
model=$("$B/reduce-tune" devices 2>/dev/null | head -1 | awk -F'  ' '{print $2}')
[ -n "$model" ] || { echo "bench/portability.sh: no CUDA device" >&2; exit 2; }
python3 "$here/portability_report.py" --split-shipped "$here/../share/reduce-tune/tuning.db" \
  --model "$model" --mine "$O/this-model.db" --others "$O/other-models.db" || exit 3

sizes='2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28'
seg=(--problems rows,columns,segments --totals 2^16,2^20,2^24)
[ -n "$quick" ] && { seg+=(--lengths 1,4,16,64,256,1024,4096,2^16,2^20 --reps 10); sizes='2^10,2^14,2^18,2^20,2^22,2^24,2^26'; }
rc=0
run() { # SOURCE STORE SHIPPED (a file, "" for none, or "embedded") [reduce_bench options]
  local src=$1 db=$2 shipped=$3
  shift 3
  local envs=(env REDUCE_TUNE_SHIPPED_DB="$shipped")
  [ "$shipped" = embedded ] && envs=(env -u REDUCE_TUNE_SHIPPED_DB)
  echo "== $src" >&2
  "${envs[@]}" "$B/bench/reduce_bench" --dtypes "$dtypes" --ops sum --sizes "$sizes" \
    --cold-only --no-overhead --db "$db" --csv "$O/1d-$src.csv" "$@" > "$O/1d-$src.md" 2>&1
  local r=$?; [ $r -eq 1 ] && rc=1; [ $r -gt 1 ] && { echo "reduce_bench ($src) exit $r" >&2; rc=3; }
  "${envs[@]}" "$B/bench/reduce_bench_segmented" --dtypes "$dtypes" --ops sum "${seg[@]}" \
    --db "$db" --csv "$O/seg-$src.csv" "${SEG_EXTRA[@]}" > "$O/seg-$src.md" 2>&1
  r=$?; [ $r -eq 1 ] && rc=1; [ $r -gt 1 ] && { echo "reduce_bench_segmented ($src) exit $r" >&2; rc=3; }
}
# CUB beside the first run only (its time does not depend on the tuning).
if [ -n "$tuned" ]; then
  SEG_EXTRA=(--contestants reduce-tune,cub); run tuned "$tuned" ""
else
  SEG_EXTRA=(--contestants reduce-tune,cub); run tuned "$absent" "$O/this-model.db"
fi
SEG_EXTRA=(--contestants reduce-tune)
run shipped "$absent" embedded
run other "$absent" "$O/other-models.db"
run defaults "$absent" ""
echo "== torch" >&2
python3 "$here/frameworks_segmented.py" --dtypes "$dtypes" --ops sum "${seg[@]}" --no-cupy \
  --csv "$O/seg-torch.csv" > "$O/seg-torch.md" 2>&1
r=$?; [ $r -eq 1 ] && rc=1
[ -e "$absent" ] && { echo "bench/portability.sh: a bench created $absent" >&2; rc=3; }

python3 "$here/portability_report.py" --dir "$O" --model "$model" --tuned-from "${tuned:-the shipped rows of $model}"
r=$?; [ $r -ne 0 ] && [ $rc -eq 0 ] && rc=$r
echo
echo "portability bench: exit $rc (0: every result checked right)"
exit $rc
