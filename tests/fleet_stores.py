#!/usr/bin/env python3
"""Store helpers of the fleet tests (tests/cli_fleet.sh, scripts/ci/slurm.sh).

  fleet_stores.py split STORE DIR   one shard store per GPU model of STORE: DIR/model-<i>.db
  fleet_stores.py best STORE        the best rows: point, configuration, time; one a line
  fleet_stores.py count STORE       measurements in STORE
  fleet_stores.py dups STORE        measurements stored twice (a measurement is its run's device,
                                    start and options, and its point, configuration and seed)
"""
import shutil
import sqlite3
import sys


def split(src, out):
    models = [r[0] for r in sqlite3.connect(src).execute("SELECT uuid FROM devices ORDER BY uuid")]
    if len(models) < 2:
        sys.exit(f"{src}: {len(models)} GPU model(s); the fleet tests want two or more")
    for i, m in enumerate(models):
        f = f"{out}/model-{i}.db"
        shutil.copy(src, f)
        c = sqlite3.connect(f)
        for t in ("best", "measurements", "runs"):
            c.execute(f"DELETE FROM {t} WHERE device_uuid != ?", (m,))
        c.execute("DELETE FROM devices WHERE uuid != ?", (m,))
        c.commit()
        c.execute("VACUUM")
        c.close()
    print(len(models), "shards")


QUERIES = {
    "best": """SELECT b.device_uuid, b.dtype, b.op, b.problem, b.count, b.n, m.key, m.median_us
               FROM best b JOIN measurements m ON m.id = b.measurement_id ORDER BY 1, 2, 3, 4, 5, 6""",
    "count": "SELECT count(*) FROM measurements",
    "dups": """SELECT count(*) FROM (SELECT 1 FROM measurements m JOIN runs r ON r.id = m.run_id
               GROUP BY m.device_uuid, r.started, r.options, m.key, m.dtype, m.op, m.problem, m.count,
               m.n, m.seed HAVING count(*) > 1)""",
}


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "split":
        return split(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 3 or sys.argv[1] not in QUERIES:
        sys.exit(__doc__)
    for row in sqlite3.connect(sys.argv[2]).execute(QUERIES[sys.argv[1]]):
        print(*row)


if __name__ == "__main__":
    main()
