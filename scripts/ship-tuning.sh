#!/usr/bin/env bash
# Makes share/reduce-tune/tuning.db, the tuning installed with the library, from stores written by
# `reduce-tune tune` on the GPUs it is for: merged, then stripped of what identifies a machine
# (host names, GPU UUIDs: a device becomes "model:<GPU name>"), of failed checks, and of all but
# the 8 fastest configurations of each (GPU model, dtype, op, problem, shape). Provenance (GPU
# model, driver, tool and NVRTC versions, dates, commands without their file paths) stays in the
# devices and runs tables and is listed in share/reduce-tune/PROVENANCE.md.
# Usage: scripts/ship-tuning.sh STORE.db...   (needs build/reduce-tune and the sqlite3 shell)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n 2,8p "$0" >&2; exit 2; }
out=share/reduce-tune/tuning.db
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in "$@"; do build/reduce-tune merge --db "$tmp/all.db" "$s" >/dev/null; done
sqlite3 "$tmp/all.db" <<'SQL'
PRAGMA foreign_keys = OFF;
DELETE FROM best;
DELETE FROM published;
DELETE FROM measurements WHERE valid = 0 OR median_us IS NULL;
UPDATE runs SET device_uuid = 'model:' || (SELECT name FROM devices d WHERE d.uuid = runs.device_uuid);
UPDATE measurements SET device_uuid = 'model:' || (SELECT name FROM devices d WHERE d.uuid = measurements.device_uuid);
DELETE FROM devices WHERE rowid NOT IN (SELECT max(rowid) FROM devices GROUP BY name);
UPDATE devices SET uuid = 'model:' || name, host = '';
DELETE FROM measurements WHERE id NOT IN (
  SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY device_uuid, dtype, op, problem, count, n
                                                ORDER BY median_us, id) AS r FROM measurements)
  WHERE r <= 8);
DELETE FROM runs WHERE id NOT IN (SELECT DISTINCT run_id FROM measurements);
INSERT INTO best (device_uuid, dtype, op, problem, count, n, measurement_id)
  SELECT device_uuid, dtype, op, problem, count, n, id FROM (
    SELECT *, row_number() OVER (PARTITION BY device_uuid, dtype, op, problem, count, n ORDER BY median_us, id) AS r
    FROM measurements) WHERE r = 1;
PRAGMA foreign_keys = ON;
PRAGMA foreign_key_check;
SQL
# A run's command as the user would type it: no build folder before the program, no store or cache
# path of the machine that ran it.
sqlite3 -separator $'\t' "$tmp/all.db" "SELECT id, options FROM runs" | while IFS=$'\t' read -r id opts; do
  clean=$(printf '%s' "$opts" | sed -E 's#^[^ ]*reduce-tune#reduce-tune#; s# --(db|cache-dir) [^ ]+##g')
  sqlite3 "$tmp/all.db" "UPDATE runs SET options = '${clean//\'/\'\'}' WHERE id = $id"
done
sqlite3 "$tmp/all.db" "PRAGMA journal_mode = DELETE; VACUUM;" >/dev/null
cp "$tmp/all.db" "$out"
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
} > share/reduce-tune/PROVENANCE.md
ls -la "$out"
