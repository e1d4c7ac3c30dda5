#!/usr/bin/env bash
# CI: the Python package. `pip install .` (scikit-build-core and nanobind from PyPI, the
# same CMake project with REDUCE_TUNE_PYTHON=ON) into a fresh virtual environment with numpy and
# pytest, then python/tests against the installed package, from outside the source tree. Without
# a GPU the GPU tests are skipped and say why; pytest's exit code 5 (no tests ran) fails CI.
#   REDUCE_TUNE_PYTHON_EXE: the Python to use (default python3).
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
cd "$(dirname "$0")/../.."
root=$PWD
py=${REDUCE_TUNE_PYTHON_EXE:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip)
"${pip[@]}" install --quiet numpy pytest
# The build tree (build/python/<wheel tag>, pyproject.toml) is kept between runs.
"${pip[@]}" install --quiet "$root"
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
