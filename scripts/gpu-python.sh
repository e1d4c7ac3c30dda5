#!/usr/bin/env bash
# The Python package on a GPU host (python3 there with torch, CuPy, numpy and pytest; no package
# registry needed): installs the wheel that scripts/portable-wheel.sh built (pip --no-index, into
# a folder on PYTHONPATH, not the environment's site-packages), runs python/tests and
# bench/python_api.py, logs to OUTDIR.
#   usage: scripts/gpu-python.sh OUTDIR [DIR]   DIR holds wheels/, python/tests/ and
#   bench/python_api.py (with bench/frameworks.py, whose size parsing and formatting it uses)
#   (default: this checkout, with the wheels in build-portable-python/wheels). TUNED_DB_GZ: a
#   gzipped tuning store for the bench (default: none, the shipped tuning inside the package).
set -uo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n 2,9p "$0" >&2; exit 2; }
mkdir -p "$1" || exit 3
OUTDIR=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${2:-$root}
dir=$(cd "$dir" && pwd)
wheels=$dir/wheels
[ -d "$wheels" ] || wheels=$root/build-portable-python/wheels
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
site=/tmp/rt-site
rm -rf "$site"
"$py" -m pip install -q --no-index --no-deps --no-compile --target "$site" "$wheels"/reduce_tune-*.whl || exit 3
if ! "$py" -c 'import pytest' 2>/dev/null; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --target "$site" \
    "$wheels"/{pytest,pluggy,iniconfig,packaging,pygments}-*.whl || exit 3
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
cd /tmp || exit 3
{
  nvidia-smi -L
  "$py" -c 'import sys, torch, reduce_tune as rt; print(sys.version.split()[0], "torch", torch.__version__, "reduce_tune", rt.__version__, rt.__file__); print(rt.devices())'
} 2>&1 | tee "$OUTDIR/env.log"

t0=$(date +%s)
timeout 330 "$py" -m pytest -ra -p no:cacheprovider --durations=8 --rootdir "$dir" "$dir/python/tests" \
  --junitxml="$OUTDIR/pytest.xml" > "$OUTDIR/pytest.log" 2>&1
prc=$?
t1=$(date +%s)
tail -40 "$OUTDIR/pytest.log"

# The bench measures what a fresh install gets: the package's shipped tuning. TUNED_DB_GZ names a
# gzipped store to use instead (REDUCE_TUNE_DB).
bench_env=()
if [ -n "${TUNED_DB_GZ:-}" ]; then
  zcat "$TUNED_DB_GZ" > /tmp/rt-tuned.db && bench_env=(REDUCE_TUNE_DB=/tmp/rt-tuned.db) || exit 3
fi
env "${bench_env[@]}" timeout 200 "$py" "$dir/bench/python_api.py" ${BENCH_ARGS:-} \
  > "$OUTDIR/python_api.md" 2> "$OUTDIR/python_api.err"
brc=$?
t2=$(date +%s)
cat "$OUTDIR/python_api.md"
tail -5 "$OUTDIR/python_api.err"
# The C++ Reducer tests, where a build of them was carried beside the wheels (DIR/reduce_tune_gpu_tests).
crc=-
if [ -x "$dir/reduce_tune_gpu_tests" ]; then
  timeout 90 "$dir/reduce_tune_gpu_tests" "reducer:*" > "$OUTDIR/cxx-reducer-tests.log" 2>&1
  crc=$?
  tail -4 "$OUTDIR/cxx-reducer-tests.log"
fi
echo "== gpu-python: C++ reducer tests rc=$crc"
echo "== gpu-python: pytest rc=$prc ($((t1 - t0)) s; 5 = no tests ran), bench rc=$brc ($((t2 - t1)) s)"
echo "== $(grep -Eo '[0-9]+ (passed|failed|skipped|errors?)' "$OUTDIR/pytest.log" | tr '\n' ' ')"
[ "$prc" -eq 0 ] && [ "$brc" -eq 0 ]
