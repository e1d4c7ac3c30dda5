#!/usr/bin/env bash
# compute-sanitizer over every valid configuration, on a GPU host: memcheck (with leak check),
# racecheck, synccheck and initcheck run the GPU tests' "[sanitize]" case
# (tests/test_gpu_sanitize.cpp: int32 and float32 sum at n = 1000 and 2^20+1), and racecheck runs
# the course material's volatile warp tail on this sm_70+ GPU ("[sanitize-volatile]") to record
# what it says of it. Also the CLI's bad-input checks that need a GPU (an unknown ordinal, a size
# larger than the GPU's memory).
#   usage: scripts/gpu-sanitize.sh OUTDIR [BUILD_DIR] [STEP...]
#     BUILD_DIR  default build-portable (scripts/portable-build.sh)
#     STEP       cli memcheck racecheck synccheck initcheck volatile (default: all, in that order)
# Environment: TIME_BUDGET (s, default 560): the steps share it, each sanitizer step getting an
# equal part of what is left, so the whole run stays under ten minutes; a step cut short says how
# far it got. RT_SANITIZE_SIZES / _DTYPES / _OPS / _VARIANTS narrow the runs (see
# tests/test_gpu_sanitize.cpp). Logs go to OUTDIR; the summary is printed last and written to
# OUTDIR/sanitize-summary.txt.
set -uo pipefail
[ $# -ge 1 ] || { sed -n 2,15p "$0" >&2; exit 2; }
mkdir -p "$1" || exit 3
OUTDIR=$(cd "$1" && pwd)
shift
B=build-portable
if [ $# -gt 0 ]; then
  case $1 in cli|memcheck|racecheck|synccheck|initcheck|volatile) ;; *) B=$1; shift ;; esac
fi
[ "${B#/}" != "$B" ] || { [ -d "$B" ] && B=$(cd "$B" && pwd); }
cd "$(dirname "$0")/.." || exit 3
T=$B/tests/reduce_tune_gpu_tests
CLI=$B/reduce-tune
export REDUCE_TUNE_CACHE=${REDUCE_TUNE_CACHE:-/tmp/rt-cache}
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
TIME_BUDGET=${TIME_BUDGET:-560}
deadline=$(( $(date +%s) + TIME_BUDGET ))
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(cli memcheck racecheck synccheck initcheck volatile)
summary=()
note() { summary+=("$*"); echo "== $*"; }

# Keeps a log under 8 MiB (head and tail): a sanitizer that reports every hazard writes a lot.
trim() {
  local f=$1
  if [ "$(stat -c %s "$f")" -gt 8388608 ]; then
    { head -c 4194304 "$f"; printf '\n[... trimmed ...]\n'; tail -c 4194304 "$f"; } > "$f.tmp" && mv "$f.tmp" "$f"
  fi
}

note "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); $("$CS" --version 2>&1 | grep -m1 -i version)"

# ---- the CLI's bad input that needs a GPU ---------------------------------------------------
cli_checks() {
  local log=$OUTDIR/sanitize-cli.log tmp
  tmp=$(mktemp -d)
  : > "$log"
  # expect NAME ALLOWED_EXITS PATTERN MAX_SECONDS -- command...
  expect() {
    local what=$1 codes=$2 pattern=$3 max_s=$4
    shift 5
    local t0 rc out secs
    t0=$(date +%s)
    out=$(timeout "$max_s" "$@" 2>&1 >/dev/null)
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    printf '$ %s\nexit %s after %s s\n%s\n\n' "$*" "$rc" "$secs" "$out" >> "$log"
    local lines
    lines=$(printf '%s\n' "$out" | grep -c .)
    if [[ " $codes " == *" $rc "* ]] && printf '%s' "$out" | grep -Eq "$pattern"; then
      note "cli ok: $what: exit $rc in ${secs} s ($lines line(s)): $(printf '%s' "$out" | grep -E -m1 "$pattern")"
    else
      note "cli FAILED: $what: exit $rc in ${secs} s (expected exit $codes and /$pattern/): $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
    fi
  }
  expect "tune on an unknown ordinal" "1" "ordinal 7|GPU 7|device 7" 120 -- \
    "$CLI" --device 7 --keys interleaved.b256.host --sizes 2^10 --db "$tmp/a.db"
  expect "query on an unknown ordinal" "1" "ordinal 7|GPU 7|device 7" 60 -- \
    "$CLI" query --device 7 --n 2^20 --db "$tmp/b.db"
  # 2^40 int32 elements are 4 TiB: refused before anything is allocated, with a message.
  expect "a size larger than the GPU's memory" "1 2" "[Mm]emory|too large|larger" 120 -- \
    "$CLI" --device 0 --dtypes int32 --keys interleaved.b256.host --sizes 2^40 --db "$tmp/c.db"
  expect "a size larger than the GPU's memory, float64" "1 2" "[Mm]emory|too large|larger" 120 -- \
    "$CLI" --device 0 --dtypes float64 --keys vectorized.b512.u4.v2.g0.shfl.atomic --sizes 2^38 --db "$tmp/d.db"
  rm -rf "$tmp"
}

# ---- compute-sanitizer ----------------------------------------------------------------------
sanitize() {
  local name=$1 tool=$2 filter=$3 left=$4
  shift 4
  local now budget log t0 rc
  now=$(date +%s)
  budget=$(( (deadline - now) / left ))
  log=$OUTDIR/sanitize-$name.log
  if [ "$budget" -lt 20 ]; then
    note "$name: not run, no time left"
    return
  fi
  t0=$(date +%s)
  timeout -s INT -k 15 "$budget" "$CS" --tool "$tool" "$@" --error-exitcode 86 --print-limit 1000 \
    "$T" "$filter" > "$log" 2>&1
  rc=$?
  trim "$log"
  local secs=$(( $(date +%s) - t0 )) errors hazards progress state
  errors=$(grep -E -m1 'ERROR SUMMARY' "$log" | sed 's/^=* *//')
  hazards=$(grep -E -m1 'RACECHECK SUMMARY' "$log" | sed 's/^=* *//')
  progress=$(grep -c '^sanitize: ' "$log")
  case $rc in
    0) state="clean" ;;
    86) state="ERRORS REPORTED" ;;
    124|137) state="TIMED OUT after ${budget} s (partial)" ;;
    *) state="exit $rc" ;;
  esac
  note "$name ($tool, ${secs} s): $state; ${errors:-no error summary}${hazards:+; $hazards}; $progress (dtype, n) groups done; last: $(grep '^sanitize: ' "$log" | tail -1)$(grep -m1 '^volatile tail: ' "$log" | sed 's/^/; /')"
}

t0=$(date +%s)
sanitizers=0
for s in "${steps[@]}"; do
  case $s in memcheck|racecheck|synccheck|initcheck|volatile) sanitizers=$((sanitizers + 1)) ;; esac
done
if [ "$sanitizers" -gt 0 ]; then
  # Fill the compile cache and check the results without a sanitizer first: the sanitizer runs
  # then load cached modules, and a failure here is not the sanitizer's.
  timeout 240 "$T" "[sanitize]" > "$OUTDIR/sanitize-plain.log" 2>&1
  rc=$?
  if [[ " ${steps[*]} " == *" volatile "* ]]; then
    timeout 120 "$T" "[sanitize-volatile]" >> "$OUTDIR/sanitize-plain.log" 2>&1
  fi
  note "without a sanitizer (exit $rc, $(( $(date +%s) - t0 )) s): $(grep -E 'test case|volatile tail:' "$OUTDIR/sanitize-plain.log" | tr '\n' ' ')"
fi

left=$sanitizers
for s in "${steps[@]}"; do
  case $s in
    cli) cli_checks ;;
    memcheck) sanitize memcheck memcheck "[sanitize]" "$left" --leak-check full; left=$((left - 1)) ;;
    racecheck) sanitize racecheck racecheck "[sanitize]" "$left"; left=$((left - 1)) ;;
    synccheck) sanitize synccheck synccheck "[sanitize]" "$left"; left=$((left - 1)) ;;
    initcheck) sanitize initcheck initcheck "[sanitize]" "$left"; left=$((left - 1)) ;;
    volatile) sanitize volatile-racecheck racecheck "[sanitize-volatile]" "$left"; left=$((left - 1)) ;;
    *) note "unknown step '$s' (cli memcheck racecheck synccheck initcheck volatile)" ;;
  esac
done

echo
echo "===================== sanitizer summary ====================="
printf '%s\n' "${summary[@]}" | tee "$OUTDIR/sanitize-summary.txt"
