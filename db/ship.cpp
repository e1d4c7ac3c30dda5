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

} // namespace

ShipStats write_shipped(const std::string& store_path, const std::string& out_path, int keep) {
  if (keep < 1) throw StoreError("reduce-tune ship: keep at least 1 configuration per point");
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
    const std::string trim =
        "DELETE FROM measurements WHERE id NOT IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY "
        "device_uuid, dtype, op, problem, count, n ORDER BY median_us, id) AS r FROM measurements) WHERE r <= " +
        std::to_string(keep) + ")";
    exec(d, trim.c_str());
    exec(d, "DELETE FROM runs WHERE id NOT IN (SELECT DISTINCT run_id FROM measurements)");
    exec(d, "INSERT INTO best (device_uuid, dtype, op, problem, count, n, measurement_id) "
            "SELECT device_uuid, dtype, op, problem, count, n, id FROM (SELECT *, row_number() OVER "
            "(PARTITION BY device_uuid, dtype, op, problem, count, n ORDER BY median_us, id) AS r "
            "FROM measurements) WHERE r = 1");
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
