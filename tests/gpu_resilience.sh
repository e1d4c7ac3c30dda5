#!/usr/bin/env bash
# Faults, hangs and interruptions (GPU): a deliberately faulting and a deliberately hanging
# test-only kernel among good ones must be recorded as failed while the sweep goes on; a sweep
# killed with SIGKILL at a random moment and then resumed must end with every point measured
# exactly once and the same best table as an uninterrupted run. Exit 4 (skipped) without a GPU.
# Usage: tests/gpu_resilience.sh path/to/reduce-tune [workdir]
set -uo pipefail
cli=$(readlink -f "$1")
work=${2:-$(mktemp -d)}
mkdir -p "$work"
if ! "$cli" devices >/dev/null 2>&1; then echo "SKIPPED: no GPU ($("$cli" devices 2>&1 | head -1))"; exit 4; fi
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
count() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$@"; }

# 1. A fault and a hang among good kernels.
db=$work/faults.db; rm -f "$db"*
REDUCE_TUNE_TEST_VARIANTS=1 "$cli" tune --device 0 --dtypes int32 --sizes 2^20 --timeout 5 --db "$db" \
  --keys interleaved.b256.host,test_fault.b32.atomic,unrolling.b256.u2.host,test_hang.b32.lastblock,vectorized.b256.u4.v4.g0.shfl.lastblock \
  > "$work/faults.out" 2> "$work/faults.err"
rc=$?
check "fault+hang sweep exits 1 (some points failed)" "[ $rc -eq 1 ]"
check "the faulting kernel is recorded as failed with the CUDA error" \
  "[ \"\$(count $db \"select count(*) from measurements where key like 'test_fault%' and valid=0 and error like '%ILLEGAL%'\")\" = 1 ]"
check "the hanging kernel is recorded as timed out" \
  "[ \"\$(count $db \"select count(*) from measurements where key like 'test_hang%' and valid=0 and error like '%timed out%'\")\" = 1 ]"
check "the three good kernels were measured and are valid" \
  "[ \"\$(count $db \"select count(*) from measurements where key not like 'test_%' and valid=1\")\" = 3 ]"
check "the supervisor reported two incidents" "[ \$(grep -c 'incident:' $work/faults.err) -eq 2 ]"

# 2. Kill -9 at a random moment, resume, compare with an uninterrupted run.
args=(--device 0 --dtypes int32,float32 --sizes 2^16,2^20,3*2^20+5 --variants interleaved,unrolling,unroll_warps,vectorized)
ref=$work/ref.db; rm -f "$ref"*
"$cli" tune "${args[@]}" --db "$ref" > "$work/ref.out" 2> "$work/ref.err"
check "uninterrupted run exits 0" "[ $? -eq 0 ]"
db=$work/killed.db; rm -f "$db"*
setsid "$cli" tune "${args[@]}" --db "$db" > /dev/null 2> "$work/killed.err" &
pid=$!
sleep "$(python3 -c 'import random; print(round(random.uniform(2, 5), 2))')"
kill -9 -- -"$pid" 2>/dev/null; wait "$pid" 2>/dev/null
partial=$(count "$db" "select count(*) from measurements")
echo "killed after $partial stored measurements"
check "the killed database is consistent" "[ \"\$(count $db 'pragma integrity_check')\" = ok ]"
"$cli" tune "${args[@]}" --db "$db" --resume > "$work/resumed.out" 2> "$work/resumed.err"
check "resumed run exits 0" "[ $? -eq 0 ]"
check "no point was measured twice" \
  "[ \"\$(count $db 'select count(*) from (select key,dtype,op,n from measurements group by 1,2,3,4 having count(*)>1)')\" = 0 ]"
check "every point of the uninterrupted run is measured" \
  "[ \"\$(count $db 'select count(distinct key||dtype||op||n) from measurements')\" = \"\$(count $ref 'select count(distinct key||dtype||op||n) from measurements')\" ]"
check "the best table covers the same problems" \
  "[ \"\$(count $db 'select count(*) from best')\" = \"\$(count $ref 'select count(*) from best')\" ]"
python3 - "$db" "$ref" <<'PY'
import sqlite3, sys
def best(p):
    c = sqlite3.connect(p)
    return {(d, o, n): (k, t) for d, o, n, k, t in c.execute(
        "select b.dtype,b.op,b.n,m.key,m.median_us from best b join measurements m on m.id=b.measurement_id")}
a, b = best(sys.argv[1]), best(sys.argv[2])
same = sum(a[p][0] == b[p][0] for p in b)
close = sum(abs(a[p][1] - b[p][1]) <= 0.1 * b[p][1] for p in b)
print(f"best configuration identical for {same}/{len(b)} problems; best time within 10% for {close}/{len(b)}")
PY
exit $fail
