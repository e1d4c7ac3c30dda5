#!/usr/bin/env bash
# The shipped tuning against this GPU's own: a fresh install with no store of its own (only
# share/reduce-tune/tuning.db) against the same GPU tuned by its own default sweep, the library's
# time per bench size side by side (target: within 5 % of the tuned time). Logs in OUTDIR; the
# comparison printed last and written to OUTDIR/shipped-vs-tuned.md.
#   usage: scripts/gpu-shipped.sh OUTDIR [BUILD_DIR]   (BUILD_DIR: default build-portable)
# SIZES: the bench sizes (default 2^10,2^12,...,2^28).
set -uo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n 2,7p "$0" >&2; exit 2; }
mkdir -p "$1" || exit 3
L=$(cd "$1" && pwd)
B=${2:-build-portable}
[ "${B#/}" != "$B" ] || { [ -d "$B" ] && B=$(cd "$B" && pwd); }
cd "$(dirname "$0")/.." || exit 3
export REDUCE_TUNE_CACHE=${REDUCE_TUNE_CACHE:-/tmp/rt-cache}
sizes=${SIZES:-2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28}
t0=$(date +%s)
REDUCE_TUNE_SHIPPED_DB= REDUCE_TUNE_DB="$L/tuned.db" $B/reduce-tune --device 0 > "$L/sweep.md" 2> "$L/sweep.err"
echo "== default sweep exit $? in $(( $(date +%s) - t0 )) s"
REDUCE_TUNE_SHIPPED_DB=share/reduce-tune/tuning.db $B/bench/reduce_bench --cold-only --no-overhead \
  --db "$L/absent.db" --sizes "$sizes" --csv "$L/shipped.csv" > "$L/bench-shipped.md" 2>&1
echo "== bench, fresh install (shipped tuning only) exit $?"
REDUCE_TUNE_SHIPPED_DB= $B/bench/reduce_bench --cold-only --no-overhead \
  --db "$L/tuned.db" --sizes "$sizes" --csv "$L/tuned.csv" > "$L/bench-tuned.md" 2>&1
echo "== bench, tuned on this GPU exit $?"
python3 - "$L/shipped.csv" "$L/tuned.csv" <<'PY' | tee "$L/shipped-vs-tuned.md"
import csv, sys
def load(p):
    out = {}
    for r in csv.DictReader(l for l in open(p) if not l.startswith('#')):
        if r.get('contestant', r.get('method', '')).startswith('reduce-tune'):
            out[(r['dtype'], r['op'], int(r['n']))] = (float(r['median_us']), r.get('config', r.get('match', '')))
    return out
s, t = load(sys.argv[1]), load(sys.argv[2])
print("| dtype | op | n | shipped us | tuned us | shipped / tuned | shipped config |")
print("|---|---|---:|---:|---:|---:|---|")
worst = 0
for k in sorted(set(s) & set(t), key=lambda k: (k[0], k[1], k[2])):
    r = s[k][0] / t[k][0]
    worst = max(worst, r)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {s[k][0]:.2f} | {t[k][0]:.2f} | {r:.3f} | {s[k][1]} |")
print(f"\nworst shipped/tuned: {worst:.3f} (target <= 1.05)")
PY
