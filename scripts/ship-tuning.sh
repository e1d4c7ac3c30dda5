#!/usr/bin/env bash
# Makes share/reduce-tune/tuning.db, the tuning installed with the library, from stores written by
# `reduce-tune tune` on the GPUs it is for: merged, then (`reduce-tune ship`, db/ship.h) stripped of
# what identifies a machine (host names, GPU UUIDs: a device becomes "model:<GPU name>"), of failed
# checks, and of all but the 8 fastest configurations of each (GPU model, dtype, op, problem,
# shape). A point's row is chosen run by run in the order they ran (`--supersede 5`): a later sweep
# replaces it where it measured it more than 5 % slower than its own best, so the tuning of
# before can be one of the stores and a new sweep changes only what it found clearly slower.
# Provenance (GPU
# model, driver, tool and NVRTC versions, dates, commands without their file paths) stays in the devices and runs tables
# and is listed in share/reduce-tune/PROVENANCE.md, whose notes below its tables are kept.
# Usage: scripts/ship-tuning.sh STORE.db...   (needs build/reduce-tune and the sqlite3 shell)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n 2,8p "$0" >&2; exit 2; }
out=share/reduce-tune/tuning.db
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in "$@"; do build/reduce-tune merge --db "$tmp/all.db" "$s" >/dev/null; done
build/reduce-tune ship --db "$tmp/all.db" --out "$tmp/shipped.db" --supersede 5 >/dev/null
# A run's command as the user would type it: no build folder before the program, no store or cache
# path of the machine that ran it.
sqlite3 -separator $'\t' "$tmp/shipped.db" "SELECT id, options FROM runs" | while IFS=$'\t' read -r id opts; do
  clean=$(printf '%s' "$opts" | sed -E 's#^[^ ]*reduce-tune#reduce-tune#; s# --(db|cache-dir) [^ ]+##g')
  sqlite3 "$tmp/shipped.db" "UPDATE runs SET options = '${clean//\'/\'\'}' WHERE id = $id"
done
sqlite3 "$tmp/shipped.db" "PRAGMA journal_mode = DELETE; VACUUM;" >/dev/null
cp "$tmp/shipped.db" "$out"
# The notes written by hand below the runs table (what each model's rows come from) are kept.
notes=$(awk 'f; /^\| run \|/ { t = 1 } t && /^$/ { f = 1 }' share/reduce-tune/PROVENANCE.md 2>/dev/null || true)
{
  echo "# Shipped tuning: provenance"
  echo
  echo "Made by \`scripts/ship-tuning.sh\` on $(date -u +%Y-%m-%d) from the stores of \`reduce-tune tune\` runs on the GPUs below; host"
  echo "names, GPU UUIDs and file paths removed. Regenerate: run the sweeps (\`reduce-tune --device 0\`, \`reduce-tune tune"
  echo "--problem rows|columns|segments\`) on each GPU model, then \`scripts/ship-tuning.sh their.db...\`."
  echo
  echo "| GPU model | sm | driver | runs | measurements kept |"
  echo "|---|---|---|---:|---:|"
  sqlite3 -separator ' | ' "$out" "SELECT '| ' || d.name, d.cc_major || d.cc_minor, d.driver_version,
    (SELECT count(*) FROM runs r WHERE r.device_uuid = d.uuid),
    (SELECT count(*) FROM measurements m WHERE m.device_uuid = d.uuid) || ' |' FROM devices d"
  echo
  echo "| run | GPU model | tool | NVRTC | started | command |"
  echo "|---:|---|---|---|---|---|"
  sqlite3 -separator ' | ' "$out" "SELECT '| ' || id, substr(device_uuid, 7), tool_version, nvrtc_version, started, options || ' |' FROM runs"
  if [ -n "$notes" ]; then echo; printf '%s\n' "$notes"; fi
} > share/reduce-tune/PROVENANCE.md
ls -la "$out"
