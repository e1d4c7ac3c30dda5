#!/usr/bin/env bash
# On the lent GPU machine (python3 there holds torch, CuPy, numpy and pytest; no registries): installs
# the wheel that scripts/device-python-build.sh built (pip --no-index, into a folder on PYTHONPATH,
# not the image's environment), runs python/tests and bench/python_api.py, logs to $OUT.
#   usage: scripts/device-python.sh [DIR]   DIR holds wheels/, python/tests/ and bench/python_api.py
#   (with bench/frameworks.py, whose size parsing and formatting it uses)
#   (default: this checkout, with the wheels in build-device-python/wheels). TUNED_DB_GZ: a gzipped
#   tuning store for the bench (default: none, the shipped tuning inside the package).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root}
wheels=$dir/wheels
[ -d "$wheels" ] || wheels=$root/build-device-python/wheels
OUT=${OUT:-/tmp/rt-out}
mkdir -p "$OUT"
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
cd /tmp
{
  nvidia-smi -L
  "$py" -c 'import sys, torch, reduce_tune as rt; print(sys.version.split()[0], "torch", torch.__version__, "reduce_tune", rt.__version__, rt.__file__); print(rt.devices())'
} 2>&1 | tee "$OUT/env.log"

t0=$(date +%s)
timeout 330 "$py" -m pytest -ra -p no:cacheprovider --durations=8 --rootdir "$dir" "$dir/python/tests" \
  --junitxml="$OUT/pytest.xml" > "$OUT/pytest.log" 2>&1
prc=$?
t1=$(date +%s)
tail -40 "$OUT/pytest.log"

# The bench measures what a fresh install gets: the package's shipped tuning. TUNED_DB_GZ names a
# gzipped store to use instead (REDUCE_TUNE_DB).
bench_env=()
if [ -n "${TUNED_DB_GZ:-}" ]; then
  zcat "$TUNED_DB_GZ" > /tmp/rt-tuned.db && bench_env=(REDUCE_TUNE_DB=/tmp/rt-tuned.db) || exit 3
fi
env "${bench_env[@]}" timeout 200 "$py" "$dir/bench/python_api.py" ${BENCH_ARGS:-} \
  > "$OUT/python_api.md" 2> "$OUT/python_api.err"
brc=$?
t2=$(date +%s)
cat "$OUT/python_api.md"
tail -5 "$OUT/python_api.err"
# The C++ Reducer tests, where a build of them was carried beside the wheels (DIR/reduce_tune_gpu_tests).
crc=-
if [ -x "$dir/reduce_tune_gpu_tests" ]; then
  timeout 90 "$dir/reduce_tune_gpu_tests" "reducer:*" > "$OUT/cxx-reducer-tests.log" 2>&1
  crc=$?
  tail -4 "$OUT/cxx-reducer-tests.log"
fi
echo "== device-python: C++ reducer tests rc=$crc"
echo "== device-python: pytest rc=$prc ($((t1 - t0)) s; 5 = no tests ran), bench rc=$brc ($((t2 - t1)) s)"
echo "== $(grep -Eo '[0-9]+ (passed|failed|skipped|errors?)' "$OUT/pytest.log" | tr '\n' ' ')"
[ "$prc" -eq 0 ] && [ "$brc" -eq 0 ]
