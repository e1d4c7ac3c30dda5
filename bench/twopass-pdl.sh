#!/usr/bin/env bash
# The two-pass finish with its second kernel launched programmatically (sm_90+) against the same
# launched plainly (REDUCE_TUNE_NO_PDL=1) and against the last-block finish, through the library
# (Reducer::reduce_async) with the bench's method, float32 sum, cold L2. Each finish is tuned to
# one fixed configuration in its own store, so only the finish differs.
# Usage: bench/twopass-pdl.sh BUILD_DIR    (Markdown table on stdout)
set -uo pipefail
B=${1:?usage: bench/twopass-pdl.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sizes='2^14,2^16,2^18,2^20,3*2^20+17,2^22,2^24'
base=vectorized.b256.u4.v4.g0.shfl
declare -A us
for fin in twopass lastblock; do
  "$B/reduce-tune" --device 0 --db "$tmp/$fin.db" --keys "$base.$fin" --dtypes float32 \
    --sizes "$sizes" > /dev/null 2> "$tmp/$fin.err" || { cat "$tmp/$fin.err" >&2; exit 3; }
  for pdl in 1 0; do
    [ "$fin" = lastblock ] && [ "$pdl" = 0 ] && continue
    REDUCE_TUNE_NO_PDL=$((1 - pdl)) "$B/bench/reduce_bench" --db "$tmp/$fin.db" --dtypes float32 \
      --sizes "$sizes" --cold-only --no-overhead --csv "$tmp/$fin$pdl.csv" > /dev/null || exit $?
    while IFS=, read -r _ _ n _ who med _; do
      [ "$who" = reduce-tune ] && us[$fin$pdl,$n]=$med
    done < <(grep -v '^#' "$tmp/$fin$pdl.csv")
  done
done
echo "| n | two-pass, programmatic us | two-pass, plain us | last-block us | plain / programmatic | last-block / programmatic |"
echo "|---:|---:|---:|---:|---:|---:|"
for n in $(grep -v '^#' "$tmp/twopass1.csv" | cut -d, -f3 | grep -v '^n$' | uniq); do
  p=${us[twopass1,$n]} q=${us[twopass0,$n]} l=${us[lastblock1,$n]}
  awk -v n="$n" -v p="$p" -v q="$q" -v l="$l" \
    'BEGIN { printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, p, q, l, q / p, l / p }'
done
