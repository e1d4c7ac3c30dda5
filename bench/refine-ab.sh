#!/usr/bin/env bash
# Refinement on and off, side by side. The default sweep refines: it measures the fastest
# configurations of each neighbouring swept size again at 2^j and 3*2^j between them (up to 2^23),
# and the library's half-octave buckets start there. "off" is the same store with the refine
# points' rows removed, as a sweep without refinement leaves it (sizes between then take the
# nearest swept size's configuration). Both are timed through the library (Reducer::reduce_async)
# with the bench's method, int32 and float32 sum, cold L2, at sizes between the swept ones,
# alternating off, on, off, on; CUB from the same runs.
# Usage: bench/refine-ab.sh BUILD_DIR [STORE]   (STORE: a default sweep's store; else one is made)
# Markdown on stdout.
set -uo pipefail
B=${1:?usage: bench/refine-ab.sh BUILD_DIR [STORE]}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${2:-}" ]; then
  cp "$2" "$tmp/on.db"
else
  "$B/reduce-tune" --device 0 --db "$tmp/on.db" > /dev/null 2> "$tmp/sweep.err" || { tail -5 "$tmp/sweep.err" >&2; exit 3; }
fi
# The swept sizes are the default ones, 2^10 .. 2^28 by 4x.
python3 - "$tmp/on.db" "$tmp/off.db" <<'PY' || exit 3
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
swept = ",".join(str(1 << e) for e in range(10, 29, 2))
db = sqlite3.connect(sys.argv[2])
db.execute(f"DELETE FROM best WHERE n NOT IN ({swept})")
db.execute(f"DELETE FROM measurements WHERE n NOT IN ({swept})")
db.commit()
PY
sizes='2^11+3,3*2^12+1,2^15,3*2^16+17,2^17+1,3*2^18,2^19,2^20,3*2^20+17,2^21,3*2^21+5,2^22,2^23'
declare -A us cub cfg
for round in 1 2; do
  for mode in off on; do
    "$B/bench/reduce_bench" --db "$tmp/$mode.db" --dtypes int32,float32 --sizes "$sizes" --cold-only \
      --no-overhead --csv "$tmp/$mode$round.csv" > "$tmp/$mode$round.md" || { tail -5 "$tmp/$mode$round.md" >&2; exit 1; }
    while IFS=, read -r dt _ n _ who med _ _ _ _ _ config; do
      case $who in
        reduce-tune) us[$mode$round,$dt,$n]=$med; cfg[$mode,$dt,$n]=$config ;;
        cub) cub[$mode$round,$dt,$n]=$med ;;
      esac
    done < <(grep -v '^#' "$tmp/$mode$round.csv" | grep -v '^dtype,')
  done
done
echo "| dtype | n | off us (run 1, 2) | on us (run 1, 2) | off / on | rt/CUB off | rt/CUB on | off config | on config |"
echo "|---|---:|---:|---:|---:|---:|---:|---|---|"
for dt in int32 float32; do
  for n in $(grep -v '^#' "$tmp/on1.csv" | awk -F, -v d=$dt '$1 == d && $5 == "reduce-tune" { print $3 }'); do
    awk -v dt=$dt -v n=$n -v a="${us[off1,$dt,$n]}" -v b="${us[off2,$dt,$n]}" -v c="${us[on1,$dt,$n]}" \
        -v d="${us[on2,$dt,$n]}" -v ca="${cub[off1,$dt,$n]}" -v cb="${cub[off2,$dt,$n]}" \
        -v cc="${cub[on1,$dt,$n]}" -v cd="${cub[on2,$dt,$n]}" -v fo="${cfg[off,$dt,$n]}" -v fn="${cfg[on,$dt,$n]}" \
      'BEGIN { off = (a + b) / 2; on = (c + d) / 2;
               printf "| %s | %s | %.2f, %.2f | %.2f, %.2f | %.3f | %.2f | %.2f | `%s` | `%s` |\n",
                      dt, n, a, b, c, d, off / on, (ca + cb) / (a + b), (cc + cd) / (c + d), fo, fn }'
  done
done
grep -h '^\*\*Summary' "$tmp"/o*.md | sed 's/^/checks: /'
