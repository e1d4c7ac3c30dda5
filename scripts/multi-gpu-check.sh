#!/usr/bin/env bash
# Several GPUs of one host, on a machine with at least two: tunes GPU 0 alone, then every
# GPU in one command into one database, and compares: wall time (goal: two GPUs <= 1.2x one),
# rows per GPU, and whether identical GPUs agree (same best variant family; best times within the
# run-to-run spread, taken as the spread between GPU 0's two runs).
# Usage: scripts/multi-gpu-check.sh path/to/reduce-tune workdir [tune options...]
set -uo pipefail
cli=$1 work=$2
shift 2
mkdir -p "$work"
n=$("$cli" devices 2>/dev/null | grep -c '^[0-9]')
if [ "$n" -lt 2 ]; then echo "SKIPPED: this machine has $n GPU(s)"; exit 4; fi
"$cli" devices
t0=$(date +%s.%N)
"$cli" tune --device 0 --db "$work/one.db" "$@" > "$work/one.md" 2> "$work/one.err" || echo "one-GPU run exit $?"
t1=$(date +%s.%N)
"$cli" tune --device all --db "$work/all.db" "$@" > "$work/all.md" 2> "$work/all.err" || echo "all-GPU run exit $?"
t2=$(date +%s.%N)
grep -E "^GPU|incident|wall time" "$work/all.err"
python3 - "$work/one.db" "$work/all.db" "$t0" "$t1" "$t2" <<'PY'
import sqlite3, sys
one, allp = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
t0, t1, t2 = map(float, sys.argv[3:6])
w1, w2 = t1 - t0, t2 - t1
devs = [r[0] for r in allp.execute("select uuid from devices order by uuid")]
print(f"wall time: one GPU {w1:.1f} s, {len(devs)} GPUs {w2:.1f} s, ratio {w2 / w1:.2f} (goal <= 1.2)")
for u in devs:
    rows, bad = allp.execute("select count(*), sum(valid=0) from measurements where device_uuid=?", (u,)).fetchone()
    print(f"  {u}: {rows} measurements, {bad} failed the check")
def best(c, u):
    return {(d, o, n): (k, t) for d, o, n, k, t in c.execute(
        "select b.dtype,b.op,b.n,m.key,m.median_us from best b join measurements m on m.id=b.measurement_id "
        "where b.device_uuid=?", (u,))}
u0 = one.execute("select uuid from devices").fetchone()[0]
solo, a, b = best(one, u0), best(allp, devs[0]), best(allp, devs[1])
# Run-to-run spread: the same GPU, alone and alongside the others.
same0 = devs[0] if devs[0] == u0 else devs[1]
spread = {p: abs(solo[p][1] - best(allp, same0)[p][1]) / solo[p][1] for p in solo if p in best(allp, same0)}
fam = lambda k: k.split('.')[0]
agree_family = sum(fam(a[p][0]) == fam(b[p][0]) for p in a if p in b)
within = sum(abs(a[p][1] - b[p][1]) / a[p][1] <= max(0.05, 2 * spread.get(p, 0)) for p in a if p in b)
print(f"GPU 0 vs GPU 1: same best variant family for {agree_family}/{len(a)} problems; best times within "
      f"the run-to-run spread (max(5%, 2x GPU 0's alone-vs-together difference)) for {within}/{len(a)}")
for p in sorted(a):
    if p in b:
        print(f"  {p[0]:8} {p[1]} n={p[2]:>10}: {a[p][0]:45} {a[p][1]:9.2f} us | {b[p][0]:45} {b[p][1]:9.2f} us"
              f" | spread {100 * spread.get(p, 0):.1f}%")
PY
