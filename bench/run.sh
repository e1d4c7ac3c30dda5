#!/usr/bin/env bash
# The 1-D benchmark in one go, Markdown on stdout, progress on stderr:
#   1. int32 and float32 sum at the default sizes (2^10 .. 2^30 and 3*2^20+17), cold and hot L2,
#      reduce-tune vs CUB vs the streaming-read ceiling, and the library's per-call overhead;
#   2. int32 and float32 min and max, cold L2, at sizes up to 2^28;
#   3. uint32, int64 and float64 sum, min and max, the same way;
#   4. bfloat16 and float16 sum, min and max, the same way (CUB with a float accumulator);
#   5. torch.sum / cupy.sum with the same method, bfloat16 and float16 included (skipped when
#      python3 has no torch).
# Usage: bench/run.sh BUILD_DIR [extra reduce_bench options for run 1]
#   BUILD_DIR/bench/reduce_bench must exist (REDUCE_TUNE_BUILD_BENCH, on when nvcc is found).
# Exit code: 0 all checks passed, 1 a result FAILED, 2 no CUDA device, 3 error.
set -uo pipefail
B=${1:?usage: bench/run.sh BUILD_DIR [reduce_bench options]}
shift
here=$(cd "$(dirname "$0")" && pwd)
bin=$B/bench/reduce_bench
if [ ! -x "$bin" ]; then
  echo "bench/run.sh: $bin not found: configure with -DREDUCE_TUNE_BUILD_BENCH=ON and build" >&2
  exit 3
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)

"$bin" --csv "$tmp/sum.csv" "$@" | tee "$tmp/sum.md"
rc_sum=${PIPESTATUS[0]}
[ "$rc_sum" -eq 2 ] && exit 2

# The other problems, cold L2 only, at sizes up to 2^28.
sizes='2^10,2^14,2^16,2^18,2^20,3*2^20+17,2^22,2^24,2^26,2^28'
echo
"$bin" --dtypes int32,float32 --ops min,max --sizes "$sizes" --no-overhead --cold-only \
  | tee "$tmp/minmax.md"
rc_mm=${PIPESTATUS[0]}
echo
"$bin" --dtypes uint32,int64,float64 --ops sum,min,max --sizes "$sizes" --no-overhead --cold-only \
  | tee "$tmp/dtypes.md"
rc_dt=${PIPESTATUS[0]}

echo
"$bin" --dtypes bfloat16,float16 --ops sum,min,max --sizes "$sizes" --no-overhead --cold-only \
  --csv "$tmp/half.csv" | tee "$tmp/half.md"
rc_half=${PIPESTATUS[0]}

python3 "$here/frameworks.py" --dtypes int32,float32,bfloat16,float16 --csv "$tmp/sum.csv" \
  --csv "$tmp/half.csv" | tee "$tmp/fw.md"
rc_fw=${PIPESTATUS[0]}

rc=0
for r in "$rc_sum" "$rc_mm" "$rc_dt" "$rc_half" "$rc_fw"; do
  if [ "$r" -eq 1 ]; then rc=1; elif [ "$r" -ne 0 ] && [ "$r" -ne 4 ] && [ "$rc" -eq 0 ]; then rc=3; fi
done
echo
echo "**bench/run.sh**: sum run exit $rc_sum, int32/float32 min/max run exit $rc_mm," \
     "uint32/int64/float64 run exit $rc_dt, bfloat16/float16 run exit $rc_half," \
     "torch/cupy exit $rc_fw (4 = skipped)," \
     "$(( $(date +%s) - t0 )) s; exit $rc"
grep -h '^\*\*Summary' "$tmp/sum.md" | sed 's/^/sum: /'
grep -h '^\*\*Summary' "$tmp/minmax.md" | sed 's/^/int32\/float32 min\/max: /'
grep -h '^\*\*Summary' "$tmp/dtypes.md" | sed 's/^/uint32\/int64\/float64: /'
grep -h '^\*\*Summary' "$tmp/half.md" | sed 's/^/bfloat16\/float16: /'
exit $rc
