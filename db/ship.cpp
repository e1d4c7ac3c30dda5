// reduce-tune store: writing the shipped-tuning form of a store (db/ship.h).
#include "db/ship.h"

#include "db/store_impl.h"
#include "kernels/trust.h"

#include <unistd.h>

#include <filesystem>

namespace reduce_tune::db {

using namespace sql;

namespace {

std::size_t count(sqlite3* db, const char* sql) {
  Stmt q(db, sql);
  return q.step() ? std::size_t(q.i64(0)) : 0;
}

/// Fills the table chosen(id) with the measurement each point's best row names, runs taken in the
/// order they started: each run's fastest replaces the choice of the runs before it where that run
/// measured the chosen configuration more than `margin` (a fraction) slower than its own fastest;
/// where it has no time of the choice (it did not measure it, or a shipped store kept only the
/// fastest), where it is faster than the choice's own time. The table evidence(id) gets each
/// replacing run's measurement of the configuration it replaced, so that shipping the result
/// again decides the same. Measurements are already the model's (device_uuid "model:NAME").
void choose_by_runs(sqlite3* d, double margin) {
  exec(d, "CREATE TEMP TABLE chosen (id INTEGER PRIMARY KEY)");
  exec(d, "CREATE TEMP TABLE evidence (id INTEGER PRIMARY KEY)");
  Stmt q(d, "SELECT m.id, m.device_uuid, m.dtype, m.op, m.problem, m.count, m.n, m.run_id, m.key, "
            "m.median_us FROM measurements m JOIN runs r ON r.id = m.run_id ORDER BY m.device_uuid, "
            "m.dtype, m.op, m.problem, m.count, m.n, r.started, r.id, m.median_us, m.id");
  Stmt add(d, "INSERT INTO chosen (id) VALUES (?1)");
  Stmt witness(d, "INSERT OR IGNORE INTO evidence (id) VALUES (?1)");
  struct Pick {
    std::int64_t id = -1;
    std::string key;
    double us = 0; ///< its time, in its run
  };
  std::string point;
  Pick choice;   // the choice of the runs before this one
  Pick run_best; // this run's fastest
  Pick seen;     // this run's measurement of the choice (id -1: none)
  std::int64_t run = -1;
  auto close_run = [&] {
    if (run_best.id < 0) return;
    // This run's time of the choice where it has one (the two measured side by side), else the
    // choice's own (the faster of the two, as without a margin).
    const bool replace = choice.id < 0 || (seen.id >= 0 ? run_best.us < seen.us * (1 - margin)
                                                        : run_best.us < choice.us);
    if (replace) {
      if (choice.id >= 0 && seen.id >= 0) {
        witness.bind(1, seen.id);
        witness.step();
        witness.reset();
      }
      choice = run_best;
    }
    run_best = seen = {};
  };
  auto close_point = [&] {
    close_run();
    if (choice.id >= 0) {
      add.bind(1, choice.id);
      add.step();
      add.reset();
    }
    choice = {};
    run = -1;
  };
  while (q.step()) {
    const std::string p = q.text(1) + '|' + q.text(2) + '|' + q.text(3) + '|' + q.text(4) + '|' +
                          std::to_string(q.i64(5)) + '|' + std::to_string(q.i64(6));
    if (p != point) {
      if (!point.empty()) close_point();
      point = p;
    }
    if (q.i64(7) != run) {
      close_run();
      run = q.i64(7);
      run_best = {q.i64(0), q.text(8), q.real(9)};
    }
    if (choice.id >= 0 && seen.id < 0 && q.text(8) == choice.key) seen = {q.i64(0), q.text(8), q.real(9)};
  }
  if (!point.empty()) close_point();
}

} // namespace

ShipStats write_shipped(const std::string& store_path, const std::string& out_path, int keep,
                        double supersede) {
  if (keep < 1) throw StoreError("reduce-tune ship: keep at least 1 configuration per point");
  if (!(supersede < 1)) throw StoreError("reduce-tune ship: the margin to supersede must be below 100 %");
  if (std::error_code ec; !std::filesystem::is_regular_file(store_path, ec))
    throw StoreError("reduce-tune ship: " + store_path + ": no such file");
  // Opening it as a Store checks it (a reduce-tune store this build reads, in a trusted place)
  // and brings an older schema up to date first.
  { Store check_it(store_path); }
  if (auto why = untrusted_store(out_path)) throw StoreError("reduce-tune ship: " + *why);
  const std::string tmp = out_path + ".tmp." + std::to_string(getpid());
  std::filesystem::remove(tmp);
  {
    auto src = open_connection(store_path, SQLITE_OPEN_READWRITE);
    Stmt into(src.get(), "VACUUM INTO ?1");
    into.bind(1, tmp);
    into.step();
  }
  ShipStats stats;
  try {
    auto db = open_connection(tmp, SQLITE_OPEN_READWRITE);
    sqlite3* d = db.get();
    exec(d, "PRAGMA foreign_keys = OFF");
    exec(d, "BEGIN");
    exec(d, "DELETE FROM best");
    exec(d, "DELETE FROM published");
    exec(d, "DELETE FROM recorded"); // a user's call points, by GPU UUID: not shipped
    exec(d, "DELETE FROM claims");   // first-use tuning in progress
    exec(d, "DELETE FROM measurements WHERE valid = 0 OR median_us IS NULL");
    exec(d, "UPDATE runs SET device_uuid = 'model:' || (SELECT name FROM devices d WHERE d.uuid = runs.device_uuid)");
    exec(d, "UPDATE measurements SET device_uuid = 'model:' || "
            "(SELECT name FROM devices d WHERE d.uuid = measurements.device_uuid)");
    // One description of each model: the one added last.
    exec(d, "DELETE FROM devices WHERE rowid NOT IN (SELECT max(rowid) FROM devices GROUP BY name)");
    exec(d, "UPDATE devices SET uuid = 'model:' || name, host = ''");
    const bool by_runs = supersede >= 0;
    if (by_runs) {
      choose_by_runs(d, supersede);
      // What is faster than a point's choice (other runs' within the margin) is not shipped: the
      // choice is the fastest of what is, so a merge, or shipping it again, keeps it.
      exec(d, "CREATE TEMP TABLE choice_at AS SELECT k.device_uuid, k.dtype, k.op, k.problem, k.count, "
              "k.n, k.median_us, k.id FROM chosen c JOIN measurements k ON k.id = c.id");
      exec(d, "CREATE INDEX temp.choice_point ON choice_at (device_uuid, dtype, op, problem, count, n)");
      exec(d, "DELETE FROM measurements AS m WHERE EXISTS (SELECT 1 FROM choice_at k WHERE "
              "k.device_uuid = m.device_uuid AND k.dtype = m.dtype AND k.op = m.op AND k.problem = "
              "m.problem AND k.count = m.count AND k.n = m.n AND (m.median_us < k.median_us OR "
              "(m.median_us = k.median_us AND m.id < k.id)))");
    }
    const std::string trim =
        "DELETE FROM measurements WHERE id NOT IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY "
        "device_uuid, dtype, op, problem, count, n ORDER BY median_us, id) AS r FROM measurements) WHERE r <= " +
        std::to_string(keep) + ")" +
        (by_runs ? " AND id NOT IN (SELECT id FROM chosen) AND id NOT IN (SELECT id FROM evidence)" : "");
    exec(d, trim.c_str());
    exec(d, "DELETE FROM runs WHERE id NOT IN (SELECT DISTINCT run_id FROM measurements)");
    if (by_runs)
      exec(d, "INSERT INTO best (device_uuid, dtype, op, problem, count, n, measurement_id) "
              "SELECT device_uuid, dtype, op, problem, count, n, id FROM measurements WHERE id IN "
              "(SELECT id FROM chosen)");
    else
      exec(d, "INSERT INTO best (device_uuid, dtype, op, problem, count, n, measurement_id) "
              "SELECT device_uuid, dtype, op, problem, count, n, id FROM (SELECT *, row_number() OVER "
              "(PARTITION BY device_uuid, dtype, op, problem, count, n ORDER BY median_us, id) AS r "
              "FROM measurements) WHERE r = 1");
    if (by_runs) exec(d, "DROP TABLE chosen; DROP TABLE evidence; DROP TABLE choice_at");
    exec(d, "COMMIT");
    exec(d, "PRAGMA foreign_keys = ON");
    {
      Stmt fk(d, "PRAGMA foreign_key_check");
      if (fk.step()) throw StoreError("reduce-tune ship: " + tmp + ": a foreign key check failed in table " + fk.text(0));
    }
    exec(d, "PRAGMA journal_mode = DELETE");
    exec(d, "VACUUM");
    stats.models = count(d, "SELECT count(*) FROM devices");
    stats.runs = count(d, "SELECT count(*) FROM runs");
    stats.measurements = count(d, "SELECT count(*) FROM measurements");
    stats.best = count(d, "SELECT count(*) FROM best");
  } catch (...) {
    std::filesystem::remove(tmp);
    throw;
  }
  std::filesystem::rename(tmp, out_path);
  return stats;
}

} // namespace reduce_tune::db
