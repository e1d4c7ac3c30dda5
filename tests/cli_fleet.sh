#!/usr/bin/env bash
# reduce-tune fleet without Slurm: submit against stand-ins for sinfo, sbatch, squeue and scancel
# (what it submits, in which order, with which dependencies; bad input refused with one line and
# exit 2, nothing submitted), a tuning task failing cleanly without a GPU and fleet status saying
# so, the merge of shard stores made from the shipped tuning (split per GPU model) giving the best
# rows of merging them directly and, shipped, those of the shipped tuning; the fleet's trusted
# directories. scripts/ci/slurm.sh runs the same on a real one-node Slurm.
# Usage: cli_fleet.sh REDUCE_TUNE SOURCE_DIR
set -euo pipefail
cli=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAILED: $*"; fails=$((fails + 1)); }

# ---- stand-ins: partitions gpu (2 nodes of 4 H100s), cpu, odd (GPUs of no known model) ------------
fake=$tmp/bin
mkdir -p "$fake"
cat > "$fake/sinfo" <<'EOF'
#!/usr/bin/env bash
p=""; while [ $# -gt 0 ]; do [ "$1" = -p ] && p=$2; shift; done
case $p in
  gpu) echo 'gpu*|gpu:h100:4(S:0-1)|2' ;;
  cpu) echo 'cpu|(null)|4' ;;
  odd) echo 'odd|gpu:4|1' ;;
esac
exit 0
EOF
cat > "$fake/sbatch" <<'EOF'
#!/usr/bin/env bash
n=$(( $(wc -l < "$FAKE_LOG" 2>/dev/null || echo 0) + 101 ))
echo "$*" >> "$FAKE_LOG"
echo "$n;cluster"
EOF
cat > "$fake/squeue" <<'EOF'
#!/usr/bin/env bash
echo '101_0|COMPLETED|None'
echo '102_0|RUNNING|None'
echo '103|PENDING|Dependency'
EOF
cat > "$fake/scancel" <<'EOF'
#!/usr/bin/env bash
echo "scancel $*" >> "$FAKE_LOG"
EOF
chmod +x "$fake"/*
export FAKE_LOG=$tmp/sbatch.log
: > "$FAKE_LOG"
slurm_path=$fake:$PATH

# expect_usage NAME WORD [PATH] -- ARGS...: exit 2, one line naming WORD, nothing submitted.
expect_usage() {
  local name=$1 word=$2 path=$3
  shift 4
  local out rc=0
  out=$(PATH=$path "$cli" "$@" 2>&1) || rc=$?
  if [ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && grep -qF -- "$word" <<<"$out" &&
     [ ! -s "$FAKE_LOG" ]; then
    pass "$name: $out"
  else
    fail "$name: exit $rc, submitted $(wc -l < "$FAKE_LOG"): $out"
  fi
  : > "$FAKE_LOG"
}

small=(--problem rows --variants rows_block --shapes 1024x1000 --dtypes float32)
expect_usage "no sbatch" "sbatch not found" /nonexistent -- fleet submit --shards "$tmp/f0" --partition gpu "${small[@]}"
[ ! -e "$tmp/f0" ] && pass "no sbatch: nothing created" || fail "no sbatch: $tmp/f0 created"
expect_usage "unknown partition" "'nope'" "$slurm_path" -- fleet submit --shards "$tmp/f1" --partition gpu,nope "${small[@]}"
expect_usage "unknown GPU model" "--archs" "$slurm_path" -- fleet submit --shards "$tmp/f1" --partition odd "${small[@]}"
expect_usage "bad tune option" "nope" "$slurm_path" -- fleet submit --shards "$tmp/f1" --partition gpu --problem nope
expect_usage "fleet's own option" "--db" "$slurm_path" -- fleet submit --shards "$tmp/f1" --partition gpu --db x.db
expect_usage "shards not writable" "/proc/rt-fleet" "$slurm_path" -- fleet submit --shards /proc/rt-fleet --partition gpu "${small[@]}"
mkdir -m 0777 "$tmp/open"
chmod 0777 "$tmp/open"
expect_usage "shards writable by others" "writable by other users" "$slurm_path" -- fleet submit --shards "$tmp/open" --partition gpu "${small[@]}"
chmod 1777 "$tmp/open"
expect_usage "shards sticky and writable by others" "writable by other users" "$slurm_path" -- fleet submit --shards "$tmp/open" --partition gpu "${small[@]}"
mkdir -p "$tmp/grp/cache"
chmod 0775 "$tmp/grp/cache"
expect_usage "cache writable by the group" "--group-write" "$slurm_path" -- fleet submit --shards "$tmp/grp" --partition gpu "${small[@]}"

# ---- a submission --------------------------------------------------------------------------------
dir=$tmp/fleet
out=$(PATH=$slurm_path "$cli" fleet submit --shards "$dir" --partition gpu --per-partition all --cpu-partition cpu \
      --sbatch "--account=acct --time=1:00:00" --constraint hbm3 "${small[@]}" 2>&1) || fail "submit: $out"
echo "$out"
mapfile -t calls < "$FAKE_LOG"
if [ "${#calls[@]}" -eq 3 ] &&
   grep -q -- '--array=0-0 ' <<<"${calls[0]}" && grep -q -- '--partition=cpu' <<<"${calls[0]}" &&
   grep -q -- '--account=acct --time=1:00:00' <<<"${calls[0]}" && grep -q 'compile.sh$' <<<"${calls[0]}" &&
   grep -q -- '--partition=gpu' <<<"${calls[1]}" && grep -q -- '--requeue' <<<"${calls[1]}" &&
   grep -q -- '--array=0-1 ' <<<"${calls[1]}" &&
   grep -q -- '--dependency=afterany:101' <<<"${calls[1]}" && grep -q -- '--gres=gpu:4' <<<"${calls[1]}" &&
   grep -q -- '--constraint=hbm3' <<<"${calls[1]}" && grep -q 'tune-gpu.sh$' <<<"${calls[1]}" &&
   grep -q -- '--dependency=afterany:102' <<<"${calls[2]}" && grep -q 'merge.sh$' <<<"${calls[2]}" &&
   grep -q 'compile job 101' <<<"$out" && grep -q 'tune job 102' <<<"$out" && grep -q 'merge job 103' <<<"$out"; then
  pass "submit: compile array, then the GPU array (requeue), then the merge after it"
else
  fail "submit: $(cat "$FAKE_LOG")"
fi
grep -q "archs=( 'sm_90' )" "$dir/scripts/compile.sh" && grep -q -- "--problem' 'rows'" "$dir/scripts/compile.sh" &&
  pass "compile script: sm_90 from the partition's H100s, the sweep's problem" || fail "compile script: $(cat "$dir/scripts/compile.sh")"
grep -q 'tune --device all --resume --cache-dir "$dir/cache" --db "$dir/shards/$task.db"' "$dir/scripts/tune-gpu.sh" &&
  pass "tune script: every GPU, resumed, its own shard" || fail "tune script: $(cat "$dir/scripts/tune-gpu.sh")"
modes=$(stat -c '%a' "$dir" "$dir/cache" "$dir/shards" | sort -u | tr '\n' ' ')
[ "$modes" = "755 " ] && pass "fleet directories: mode 755" || fail "fleet directories: modes $modes"

# ---- a tuning task without a GPU fails cleanly, and status says so -------------------------------
rc=0
SLURM_ARRAY_TASK_ID=0 bash "$dir/scripts/tune-gpu.sh" > "$tmp/task.out" 2>&1 || rc=$?
state=$(cat "$dir/state/tune-gpu-0" 2>/dev/null || true)
if [ "$rc" -ne 0 ] && grep -q '^state=failed' <<<"$state" && grep -q "^exit=$rc" <<<"$state" &&
   grep -q '^error=reduce-tune: ' <<<"$state"; then
  pass "tuning task without a GPU: failed (exit $rc), its error recorded"
else
  fail "tuning task without a GPU: exit $rc, state: $state; $(cat "$tmp/task.out")"
fi
status=$(PATH=$slurm_path "$cli" fleet status "$dir" 2>&1) || fail "status: $status"
echo "$status"
err=$(sed -n 's/^error=//p' "$dir/state/tune-gpu-0")
grep -F -- "gpu-0" <<<"$status" | grep -q "RUNNING; the step failed (exit $rc): $err" &&
  grep -q 'gpu-1 .*not started' <<<"$status" && grep -q 'PENDING (Dependency)' <<<"$status" &&
  grep -q '1 tuning task(s) failed' <<<"$status" &&
  pass "status: the failed task and its error, Slurm's states" || fail "status"

# ---- the merge: shards made from the shipped tuning, split per GPU model -------------------------
shipped=$src/share/reduce-tune/tuning.db
python3 "$src/tests/fleet_stores.py" split "$shipped" "$dir/shards"
bash "$dir/scripts/merge.sh" || fail "the merge script"
"$cli" merge --db "$tmp/direct.db" "$dir"/shards/model-*.db > /dev/null
"$cli" fleet merge "$dir" > /dev/null || fail "fleet merge again"
stores() { python3 "$src/tests/fleet_stores.py" "$@"; }
best() { stores best "$1"; }
[ "$(stores dups "$dir/fleet.db")" = 0 ] && [ "$(stores count "$dir/fleet.db")" = "$(stores count "$tmp/direct.db")" ] &&
  pass "merged twice: no duplicate rows" || fail "merged twice: $(stores dups "$dir/fleet.db") duplicated measurements"
if [ -n "$(best "$dir/fleet.db")" ] && [ "$(best "$dir/fleet.db")" = "$(best "$tmp/direct.db")" ]; then
  pass "fleet.db: the best rows of merging the shards directly ($(best "$dir/fleet.db" | wc -l))"
else
  fail "fleet.db and the direct merge differ"
fi
[ "$(best "$dir/tuning.db")" = "$(best "$shipped")" ] && pass "tuning.db: the shipped tuning's best rows" ||
  fail "tuning.db differs from the shipped tuning: $(diff <(best "$dir/tuning.db") <(best "$shipped") | head -5)"
status=$("$cli" fleet status "$dir" 2>&1)
grep -q "tuning.db (REDUCE_TUNE_SHIPPED_DB)" <<<"$status" && pass "status: the merge is done" || fail "status after the merge: $status"

# The merge refuses shards others may write.
chmod o+w "$dir/shards"
rc=0
out=$("$cli" fleet merge "$dir" 2>&1) || rc=$?
[ "$rc" -ne 0 ] && grep -q "writable by other users" <<<"$out" && pass "merge refuses: $out" || fail "merge of open shards: exit $rc: $out"
chmod o-w "$dir/shards"

echo "$fails failed"
[ "$fails" -eq 0 ]
