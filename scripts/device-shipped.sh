#!/usr/bin/env bash
# Issue 16's shipped-tuning target on the lent GPU machine: a fresh install with no store of its
# own (only share/reduce-tune/tuning.db) against the same GPU tuned by its own default sweep, the
# library's time per bench size side by side. Logs under $OUT; the comparison last.
# After scripts/device-build.sh here:   B=build-device scripts/device-shipped.sh
set -uo pipefail
OUT=${OUT:-/tmp/rt-out}
L=$OUT/logs
mkdir -p "$L"
B=${B:-build-device}
export REDUCE_TUNE_CACHE=/tmp/rt-cache
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
tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs
