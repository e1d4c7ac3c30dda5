#!/usr/bin/env bash
# bf16 and f16 on a GPU host in one run: their GPU tests, a sweep of bf16 sum over the vector
# variants (into a store of its own), and the bench of bf16 (sum with that store, min and max and
# float16 with the built-in default) against CUB with a float accumulator and the streaming
# ceiling, then torch.sum where python3 has torch. Logs in OUTDIR; a summary printed last. The GPU
# tests took over 80 s on an H100 (about 3,000 kernels compiled, then every configuration run).
#   usage: scripts/gpu-half.sh OUTDIR [BUILD_DIR] [tests|sweep|bench|frameworks ...]   (default: all four)
# BUILD_DIR: default build-portable (scripts/portable-build.sh).
set -uo pipefail
[ $# -ge 1 ] || { sed -n 2,8p "$0" >&2; exit 2; }
mkdir -p "$1" || exit 3
L=$(cd "$1" && pwd)
shift
B=build-portable
if [ $# -gt 0 ]; then
  case $1 in tests|sweep|bench|frameworks) ;; *) B=$1; shift ;; esac
fi
[ "${B#/}" != "$B" ] || { [ -d "$B" ] && B=$(cd "$B" && pwd); }
cd "$(dirname "$0")/.." || exit 3
FW=${FW:-bench/frameworks.py}
export REDUCE_TUNE_CACHE=${REDUCE_TUNE_CACHE:-/tmp/rt-cache}
steps=${*:-tests sweep bench frameworks}
summary=()
note() { summary+=("$*"); echo "== $*"; }
since() { echo $(( $(date +%s) - $1 )); }
has() { [[ " $steps " == *" $1 "* ]]; }
sizes='2^10,2^14,2^16,2^18,2^20,3*2^20+17,2^22,2^24,2^26,2^28'

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$L/gpu.txt" 2>&1
note "gpu: $(head -1 "$L/gpu.txt")"
if has tests; then
  t0=$(date +%s)
  timeout 170 $B/tests/reduce_tune_gpu_tests "[half]" > "$L/gpu-tests-half.log" 2>&1
  note "half GPU tests exit $? ($(since $t0) s): $(tail -2 "$L/gpu-tests-half.log" | tr '\n' ' ')"
fi
if has sweep; then
  t0=$(date +%s)
  timeout 30 $B/reduce-tune tune --device 0 --dtypes bfloat16 --ops sum --variants vectorized,streaming \
    --sizes '2^10,2^14,2^16,2^18,2^20,2^21,2^22,2^24,2^26,2^28' --db "$L/half.db" --reps 10 \
    > "$L/sweep-bf16.md" 2> "$L/sweep-bf16.err"
  note "bf16 sum sweep exit $? in $(since $t0) s: $(grep -E 'run [0-9]+|wall time' "$L/sweep-bf16.err" | tr '\n' ' ' | cut -c1-200)"
fi
if has bench; then
  t0=$(date +%s)
  timeout 25 $B/bench/reduce_bench --dtypes bfloat16 --ops sum --sizes "$sizes" --cold-only --no-overhead \
    --db "$L/half.db" --csv "$L/bench-bf16-sum.csv" > "$L/bench-bf16-sum.md" 2> "$L/bench-bf16-sum.err"
  note "bf16 sum bench (tuned) exit $? ($(since $t0) s): $(grep '^\*\*Summary' "$L/bench-bf16-sum.md")"
  t0=$(date +%s)
  timeout 20 $B/bench/reduce_bench --dtypes bfloat16,float16 --ops sum,min,max --sizes "$sizes" --cold-only \
    --no-overhead --db "$L/absent.db" --reps 20 --csv "$L/bench-half-builtin.csv" \
    > "$L/bench-half-builtin.md" 2> "$L/bench-half-builtin.err"
  note "bf16/f16 bench (built-in default) exit $? ($(since $t0) s): $(grep '^\*\*Summary' "$L/bench-half-builtin.md")"
fi
if has frameworks; then
  t0=$(date +%s)
  timeout 10 python3 "$FW" --dtypes bfloat16,float16 --sizes "$sizes" \
    --csv "$L/bench-bf16-sum.csv" --csv "$L/bench-half-builtin.csv" > "$L/frameworks.md" 2>&1
  note "frameworks exit $? ($(since $t0) s): $(tail -1 "$L/frameworks.md" | cut -c1-200)"
fi
# The headline: reduce-tune / CUB and / ceiling per size for bf16 sum (tuned).
if [ -f "$L/bench-bf16-sum.md" ]; then
  grep -E '^\| (2\^|[0-9])' "$L/bench-bf16-sum.md" | awk -F'|' '{printf "%s rt %s us, cub %s us, ceil %s us, rt/CUB %s, rt/ceil %s, %s,%s\n", $2, $3, $6, $9, $12, $13, $15, $16}'
fi
echo
echo "==== summary"
printf '%s\n' "${summary[@]}" | tee "$L/summary.txt"
