#!/usr/bin/env bash
# CI: reduce-tune fleet on a real Slurm. Installs Debian's slurm-wlm and munge, starts a one-node
# cluster on this machine (munged, slurmctld and slurmd with their own key, configuration, state
# and ports under a temporary directory; stopped at exit), then:
#  - bad input (a partition Slurm does not know, a shards directory others may write) is refused
#    with one line and exit 2, and nothing is queued;
#  - `reduce-tune fleet submit` of a small sweep: the compile array fills the cache, the GPU task
#    fails cleanly on this machine without a GPU and `fleet status` says so;
#  - the merge job, over shard stores made from the shipped tuning (split per GPU model), is
#    cancelled (scancel) while it waits on a shard after merging the first, then requeued: it
#    leaves no duplicate row, and gives the best rows of merging the shards directly and, shipped,
#    those of the shipped tuning.
# Needs build/reduce-tune (scripts/setup.sh builds it, and is quick when it is built).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
start=$(date +%s)

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi
scripts/setup.sh >/dev/null
cli=$root/build/reduce-tune

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$tmp/slurmctld.pid" ] && scancel $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
  for f in "$tmp"/slurmctld.pid "$tmp"/slurmd.pid "$tmp"/munge/munged.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  sleep 1
  rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAILED: $*"; fails=$((fails + 1)); }
logs() { tail -n 20 "$tmp"/slurmctld.log "$tmp"/slurmd.log "$tmp"/munge/munged.log 2>/dev/null || true; }

# ---- the cluster --------------------------------------------------------------------------------
mkdir -m 0700 "$tmp/munge" "$tmp/state" "$tmp/spool"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$tmp/munge/munge.key"
munged --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" --seed-file="$tmp/munge/munged.seed"
host=$(hostname -s)
export SLURM_CONF=$tmp/slurm.conf
cat > "$SLURM_CONF" <<EOF
ClusterName=rtci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=600
JobRequeue=1
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N "$host"
for _ in $(seq 60); do
  [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break
  sleep 1
done
[ "$(sinfo -h -o %T 2>/dev/null)" = idle ] || { echo "slurm.sh: the node did not come up"; logs; exit 1; }
echo "one-node Slurm $(sinfo -V | cut -d' ' -f2) up in $(( $(date +%s) - start )) s"

# wait_for SECONDS COMMAND...: polls until it succeeds.
wait_for() {
  local limit=$1
  shift
  for _ in $(seq $((limit * 5))); do
    "$@" && return 0
    sleep 0.2
  done
  return 1
}
queued() { squeue -h -o %i | wc -l; }

# ---- bad input: one line, exit 2, nothing queued --------------------------------------------------
small=(--problem array --sizes 2^20 --variants interleaved --dtypes float32)
expect_usage() { # NAME WORD ARGS...
  local name=$1 word=$2 out rc=0 before
  shift 2
  before=$(queued)
  out=$("$cli" "$@" 2>&1) || rc=$?
  if [ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && grep -qF -- "$word" <<<"$out" &&
     [ "$(queued)" -eq "$before" ]; then
    pass "$name: $out"
  else
    fail "$name: exit $rc: $out"
  fi
}
expect_usage "unknown partition" "'gpu-nope'" fleet submit --shards "$tmp/f1" --partition debug,gpu-nope --archs sm_80 "${small[@]}"
mkdir -m 0777 "$tmp/open"
chmod 0777 "$tmp/open"
expect_usage "shards writable by others" "writable by other users" fleet submit --shards "$tmp/open" --partition debug --archs sm_80 "${small[@]}"

# ---- shard stores from the shipped tuning, split per GPU model ----------------------------------
dir=$tmp/fleet
mkdir -m 0755 "$dir" "$dir/shards"
shipped=$root/share/reduce-tune/tuning.db
stores() { python3 "$root/tests/fleet_stores.py" "$@"; }
stores split "$shipped" "$dir/shards" >/dev/null
# The second shard locked (rollback journal: readers wait) until the merge has been cancelled.
python3 - "$dir/shards/model-1.db" "$tmp/locked" "$tmp/unlock" <<'EOF' &
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
for _ in range(3000):
    if os.path.exists(sys.argv[3]):
        break
    time.sleep(0.1)
c.execute("ROLLBACK")
EOF
pids+=($!)
wait_for 10 test -e "$tmp/locked" || fail "the shard lock"

# ---- the fleet ------------------------------------------------------------------------------------
out=$("$cli" fleet submit --shards "$dir" --partition debug --archs sm_80 "${small[@]}" 2>&1) || { fail "submit: $out"; logs; }
echo "$out"
conf() { sed -n "s/^$1=//p" "$dir/fleet.conf"; }
compile_job=$(conf compile_job)
tune_job=$(conf partition | cut -d' ' -f4)
merge_job=$(conf merge_job)
[ -n "$compile_job" ] && [ -n "$tune_job" ] && [ -n "$merge_job" ] && grep -q "merge job $merge_job" <<<"$out" &&
  pass "submitted: compile $compile_job, tune $tune_job, merge $merge_job" || fail "job ids: $out"

step_is() { grep -q "^state=$2" "$dir/state/$1" 2>/dev/null; }
if wait_for 240 step_is compile-sm_80 done; then
  pass "compile array: done, $(find "$dir/cache" -name '*.kernel' | wc -l) kernels cached"
else
  fail "compile array: $(cat "$dir/state/compile-sm_80" 2>/dev/null) $(cat "$dir"/logs/compile-* 2>/dev/null | tail -5)"
fi
[ "$(find "$dir/cache" -name '*.kernel' | wc -l)" -gt 0 ] || fail "the compile cache is empty"
if wait_for 60 step_is tune-debug-0 failed; then
  err=$(sed -n 's/^error=//p' "$dir/state/tune-debug-0")
  status=$("$cli" fleet status "$dir")
  echo "$status"
  grep -F "debug-0" <<<"$status" | grep -qF "failed (exit 1): $err" && grep -q "1 tuning task(s) failed" <<<"$status" &&
    pass "GPU task without a GPU: failed cleanly, and status says so: $err" || fail "status of the failed task"
else
  fail "GPU task: $(cat "$dir/state/tune-debug-0" 2>/dev/null)"
fi

# The merge merges model-0, then waits on the locked model-1: cancel it there, requeue it, unlock.
merged_first() { grep -qs "merged model-0.db" "$dir"/logs/merge-*.out; }
if wait_for 60 merged_first; then
  scancel "$merge_job"
  wait_for 30 bash -c "! squeue -h -j $merge_job -o %T 2>/dev/null | grep -q RUNNING" || fail "scancel $merge_job"
  rows_at_cancel=$(stores count "$dir/fleet.db")
  scontrol requeue "$merge_job" || fail "scontrol requeue $merge_job"
  # A requeued job waits two minutes before it may start again: now.
  scontrol update JobId="$merge_job" StartTime=now || fail "scontrol update $merge_job StartTime=now"
  touch "$tmp/unlock"
  pass "merge cancelled after the first shard ($rows_at_cancel rows in fleet.db), requeued"
else
  fail "the merge did not reach the first shard: $(cat "$dir"/logs/merge-*.out 2>/dev/null | tail -5)"
  touch "$tmp/unlock"
fi
if wait_for 120 step_is merge done; then
  pass "merge: done after the requeue"
else
  fail "merge: $(cat "$dir/state/merge" 2>/dev/null) $(cat "$dir"/logs/merge-*.out 2>/dev/null | tail -5)"
  logs
fi
status=$("$cli" fleet status "$dir")
echo "$status"
grep -q "tuning.db (REDUCE_TUNE_SHIPPED_DB)" <<<"$status" || fail "status after the merge"

"$cli" merge --db "$tmp/direct.db" "$dir"/shards/model-*.db >/dev/null
best() { stores best "$1"; }
dups=$(stores dups "$dir/fleet.db")
[ "$dups" = 0 ] && [ "$(stores count "$dir/fleet.db")" = "$(stores count "$tmp/direct.db")" ] &&
  pass "after scancel and requeue: no duplicate rows" || fail "duplicates after the requeue: $dups"
[ -n "$(best "$dir/fleet.db")" ] && [ "$(best "$dir/fleet.db")" = "$(best "$tmp/direct.db")" ] &&
  pass "fleet.db: the best rows of merging the shards directly ($(best "$dir/fleet.db" | wc -l))" || fail "fleet.db differs from the direct merge"
[ "$(best "$dir/tuning.db")" = "$(best "$shipped")" ] && pass "tuning.db: the shipped tuning's best rows" ||
  fail "tuning.db differs from the shipped tuning"

echo "slurm: $fails failed, in $(( $(date +%s) - start )) s"
[ "$fails" -eq 0 ]
