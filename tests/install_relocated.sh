#!/usr/bin/env bash
# The shipped tuning is found wherever the library is: installs the build tree to one prefix,
# moves the prefix, hides the source and build trees (an empty tmpfs over each, in a private mount
# namespace, where the system allows one), and checks that the moved CLI's lookup grades a 1-D, a
# rows, a columns and an offsets point of the H100 `shipped`, with no environment pointing at it.
# Usage: install_relocated.sh BUILD_DIR SOURCE_DIR (works in a temporary directory outside both)
set -euo pipefail
h100='model:NVIDIA H100 80GB HBM3'

# The lookups themselves; run inside the namespace when there is one.
if [ "${1:-}" = --check ]; then
  work=$2
  cli="$work/moved/bin/reduce-tune"
  fail=0
  for p in "--n 2^24" "--problem rows --shape 2^20x16" "--problem columns --shape 65536x256" \
           "--problem segments --shape 2^22x4"; do
    # shellcheck disable=SC2086
    out=$(env -u REDUCE_TUNE_SHIPPED_DB HOME="$work/home" XDG_DATA_HOME="$work/home" \
          "$cli" query --db "$work/none.db" --lookup --uuid "$h100" $p 2>&1) || true
    echo "$out"
    [[ $out == *" shipped ("* ]] || { echo "FAILED: $p is not graded shipped"; fail=1; }
  done
  [ ! -e "$work/none.db" ] || { echo "FAILED: the lookup created a store"; fail=1; }
  exit $fail
fi

build=$(realpath "$1") source=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/reduce-tune-relocated.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home"
cmake --install "$build" --prefix "$work/first" >/dev/null
mv "$work/first" "$work/moved"
script=$(realpath "$0")
cp "$script" "$work/check.sh"
if unshare -rm true 2>/dev/null; then
  unshare -rm bash -c '
    set -e
    mount -t tmpfs none "$1"
    mount -t tmpfs none "$2" 2>/dev/null || true  # inside the source tree it is hidden already
    if [ -n "$(ls -A "$1")" ]; then echo "FAILED: the source tree is still visible"; exit 1; fi
    echo "(source and build trees hidden)"
    bash "$3/check.sh" --check "$3"' _ "$source" "$build" "$work"
else
  echo "(no private mount namespace here: the source tree stays visible; checking the move alone)"
  bash "$work/check.sh" --check "$work"
fi
# A corrupt shipped file is reported, never fatal to the lookup.
cli="$work/moved/bin/reduce-tune"
printf 'not a database' > "$work/corrupt.db"
out=$(REDUCE_TUNE_SHIPPED_DB="$work/corrupt.db" "$cli" query --db "$work/none.db" --lookup --uuid "$h100" --n 2^20 2>&1 || true)
echo "$out"
[[ $out == *"cannot be used"* ]] || { echo "FAILED: a corrupt shipped file is not reported"; exit 1; }
echo "relocated install: ok"
