#!/usr/bin/env bash
# CI: the Python package. The wheel of scripts/ci/lib/wheel.sh (the same CMake project with
# REDUCE_TUNE_PYTHON=ON, CPython 3.12 or newer; wheel.sh then checks that very wheel where the
# build dependencies are not) installed into a fresh virtual environment with numpy and pytest,
# then python/tests against the installed package, from outside the source tree. Without a GPU
# the GPU tests are skipped and say why; pytest's exit code 5 (no tests ran) fails CI.
set -euo pipefail
source "$(dirname "$0")/lib/wheel.sh"
build_ci_wheel
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip)
"${pip[@]}" install --quiet numpy pytest
"${pip[@]}" install --quiet --no-deps "$whl"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import pathlib, reduce_tune
where = pathlib.Path(reduce_tune.__file__)
assert "site-packages" in where.parts, f"reduce_tune imported from {where}, not the installed package"
print(f"reduce_tune {reduce_tune.__version__} installed at {where.parent}; dtypes {reduce_tune.dtypes()}; "
      f"gpu_available {reduce_tune.gpu_available()}")
PY
"$work/venv/bin/reduce-tune" --help >/dev/null   # the CLI, installed with the package
set +e
"$work/venv/bin/python" -m pytest -ra -p no:cacheprovider --rootdir "$root" "$root/python/tests"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "python.sh: pytest collected no tests (exit 5): failing" >&2
  exit 1
fi
exit "$rc"
