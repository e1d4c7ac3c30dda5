// reduce-tune store: merging another store file into this one (reduce-tune merge).
#include "db/store_impl.h"

#include "kernels/trust.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <tuple>
#include <unordered_map>

namespace reduce_tune::db {

using namespace sql;

namespace {

std::vector<std::string> table_columns(sqlite3* db, const std::string& table) {
  std::vector<std::string> out;
  Stmt q(db, "SELECT name FROM pragma_table_info('" + table + "') ORDER BY cid");
  while (q.step()) out.push_back(q.text(0));
  return out;
}

/// The columns of `table` both databases have, less `skip`, in this database's order: what a merge
/// copies, so that a column a later migration adds is copied too once both sides have it.
std::vector<std::string> common_columns(sqlite3* ours, sqlite3* other, const std::string& table,
                                        const std::set<std::string>& skip) {
  const auto theirs = table_columns(other, table);
  std::vector<std::string> out;
  for (const auto& c : table_columns(ours, table))
    if (!skip.count(c) && std::find(theirs.begin(), theirs.end(), c) != theirs.end()) out.push_back(c);
  return out;
}

std::string join(const std::vector<std::string>& cols, const std::string& prefix = "") {
  std::string s;
  for (const auto& c : cols) s += (s.empty() ? "" : ", ") + prefix + c;
  return s;
}

std::string placeholders(std::size_t from, std::size_t count) {
  std::string s;
  for (std::size_t i = 0; i < count; ++i) s += (i ? ", ?" : "?") + std::to_string(from + i);
  return s;
}

bool has_column(const std::vector<std::string>& cols, const std::string& c) {
  return std::find(cols.begin(), cols.end(), c) != cols.end();
}

int index_of(const std::vector<std::string>& cols, const std::string& c) {
  const auto it = std::find(cols.begin(), cols.end(), c);
  if (it == cols.end()) throw StoreError("reduce-tune store: merge: the other store has no column " + c);
  return int(it - cols.begin());
}

} // namespace

MergeStats Store::merge_from(const std::string& other_path) {
  sqlite3* ours = impl_->db.get();
  const std::string what = "reduce-tune store: merge " + other_path;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(other_path, ec)) throw StoreError(what + ": no such file");
  if (auto why = untrusted_store(other_path)) throw StoreError(what + ": " + *why);
  if (const char* mine = sqlite3_db_filename(ours, "main"); mine && *mine &&
      std::filesystem::equivalent(mine, other_path, ec))
    return {}; // a store merged into itself: everything is already here

  // Never created (no SQLITE_OPEN_CREATE), migrated or written (query_only). Not opened
  // read-only: a read-only connection to a WAL file leaves -wal and -shm files behind, where a
  // read-write one, the last to close, removes them.
  std::unique_ptr<sqlite3, CloseDb> other = open_connection(other_path, SQLITE_OPEN_READWRITE);
  sqlite3* raw = other.get();
  exec(raw, "PRAGMA query_only = 1");
  exec(raw, "BEGIN"); // one consistent snapshot of the other store, even while a tuner writes it
  int version = 0;
  bool has_published = false, has_recorded = false, has_reductions = false;
  {
    Stmt q(raw, "SELECT (SELECT user_version FROM pragma_user_version), "
                   "(SELECT application_id FROM pragma_application_id), "
                   "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'published'), "
                   "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'recorded'), "
                   "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'reductions')");
    q.step();
    version = int(q.i64(0));
    has_published = q.i64(2) > 0;
    has_recorded = q.i64(3) > 0;
    has_reductions = q.i64(4) > 0;
    if (q.i64(1) != kApplicationId || version < 1)
      throw StoreError(what + ": not a reduce-tune store (application_id " + std::to_string(q.i64(1)) +
                       ", user_version " + std::to_string(version) + ")");
    if (version > schema_version())
      throw StoreError(what + ": schema version " + std::to_string(version) + " is newer than this build's " +
                       std::to_string(schema_version()) + "; merge it with a newer reduce-tune");
  }
  const auto dev_cols = common_columns(ours, raw, "devices", {});
  const auto run_cols = common_columns(ours, raw, "runs", {"id"});
  const auto m_cols = common_columns(ours, raw, "measurements", {"id", "run_id"});
  const auto pub_cols = has_published ? common_columns(ours, raw, "published", {}) : std::vector<std::string>{};
  const auto rec_cols = has_recorded ? common_columns(ours, raw, "recorded", {}) : std::vector<std::string>{};

  MergeStats stats;
  impl_->write([&] {
    stats = {};
    // Devices: new ones inserted; known ones take the other's description when it was seen later.
    {
      Stmt src(raw, "SELECT " + join(dev_cols) + " FROM devices ORDER BY rowid");
      Stmt known(ours, "SELECT 1 FROM devices WHERE uuid = ?1");
      std::string set;
      for (const auto& c : dev_cols)
        if (c != "uuid" && c != "first_seen") set += (set.empty() ? "" : ", ") + c + " = excluded." + c;
      Stmt ins(ours, "INSERT INTO devices (" + join(dev_cols) + ") VALUES (" +
                            placeholders(1, dev_cols.size()) + ") ON CONFLICT (uuid) DO UPDATE SET " + set +
                            " WHERE excluded.last_seen > devices.last_seen");
      Stmt first(ours, "UPDATE devices SET first_seen = min(first_seen, ?2) WHERE uuid = ?1");
      const int uuid = index_of(dev_cols, "uuid"), first_seen = index_of(dev_cols, "first_seen");
      while (src.step()) {
        known.bind_from(1, src, uuid);
        stats.devices += !known.step();
        known.reset();
        for (std::size_t c = 0; c < dev_cols.size(); ++c) ins.bind_from(int(c) + 1, src, int(c));
        ins.step();
        ins.reset();
        first.bind_from(1, src, uuid);
        first.bind_from(2, src, first_seen);
        first.step();
        first.reset();
      }
    }
    // Runs: the same run is (device, started, tool version, options); other id -> our id.
    std::unordered_map<std::int64_t, std::int64_t> run_of;
    std::set<std::int64_t> existing_runs;
    {
      Stmt src(raw, "SELECT id, " + join(run_cols) + " FROM runs ORDER BY id");
      Stmt find(ours, "SELECT id FROM runs WHERE device_uuid = ?1 AND started = ?2 AND tool_version = ?3 "
                         "AND options = ?4 ORDER BY id LIMIT 1");
      Stmt ins(ours, "INSERT INTO runs (" + join(run_cols) + ") VALUES (" + placeholders(1, run_cols.size()) +
                            ") RETURNING id");
      const int dev = 1 + index_of(run_cols, "device_uuid"), started = 1 + index_of(run_cols, "started"),
                tool = 1 + index_of(run_cols, "tool_version"), opts = 1 + index_of(run_cols, "options");
      while (src.step()) {
        find.bind_from(1, src, dev);
        find.bind_from(2, src, started);
        find.bind_from(3, src, tool);
        find.bind_from(4, src, opts);
        if (find.step()) {
          run_of[src.i64(0)] = find.i64(0);
          existing_runs.insert(find.i64(0));
        } else {
          for (std::size_t c = 0; c < run_cols.size(); ++c) ins.bind_from(int(c) + 1, src, int(c) + 1);
          ins.step();
          run_of[src.i64(0)] = ins.i64(0);
          ins.reset();
          ++stats.runs;
        }
        find.reset();
      }
    }
    // Measurements: the same measurement is (run, key, dtype, op, problem, count, n, seed). A store
    // of schema 2 or older has no problem or count columns: its rows are array problems.
    using Identity = std::tuple<std::string, std::string, std::string, std::string, std::int64_t, std::int64_t,
                                std::int64_t>;
    std::unordered_map<std::int64_t, std::set<Identity>> present; // for runs this store had already
    {
      Stmt have(ours, "SELECT key, dtype, op, problem, count, n, seed FROM measurements WHERE run_id = ?1");
      for (const std::int64_t id : existing_runs) {
        have.bind(1, id);
        auto& s = present[id];
        while (have.step())
          s.emplace(have.text(0), have.text(1), have.text(2), have.text(3), have.i64(4), have.i64(5), have.i64(6));
        have.reset();
      }
    }
    using Shaped = std::tuple<std::string, std::string, std::string, std::string, std::int64_t, std::int64_t>;
    std::set<Shaped> touched; // (device, dtype, op, problem, count, n)
    {
      Stmt src(raw, "SELECT run_id, " + join(m_cols) + " FROM measurements ORDER BY id");
      Stmt ins(ours, "INSERT INTO measurements (run_id, " + join(m_cols) + ") VALUES (?1, " +
                            placeholders(2, m_cols.size()) + ")");
      const int key = 1 + index_of(m_cols, "key"), dtype = 1 + index_of(m_cols, "dtype"),
                op = 1 + index_of(m_cols, "op"), n = 1 + index_of(m_cols, "n"), seed = 1 + index_of(m_cols, "seed"),
                dev = 1 + index_of(m_cols, "device_uuid");
      const bool shaped = has_column(m_cols, "problem") && has_column(m_cols, "count");
      const int problem = shaped ? 1 + index_of(m_cols, "problem") : 0,
                count = shaped ? 1 + index_of(m_cols, "count") : 0;
      while (src.step()) {
        const auto run = run_of.find(src.i64(0));
        if (run == run_of.end())
          throw StoreError(what + ": measurement of unknown run " + std::to_string(src.i64(0)));
        const std::string p = shaped ? src.text(problem) : std::string(name(Problem::array));
        const std::int64_t k = shaped ? src.i64(count) : 1;
        if (existing_runs.count(run->second) &&
            !present[run->second]
                 .emplace(src.text(key), src.text(dtype), src.text(op), p, k, src.i64(n), src.i64(seed))
                 .second) {
          ++stats.duplicates;
          continue;
        }
        ins.bind(1, run->second);
        for (std::size_t c = 0; c < m_cols.size(); ++c) ins.bind_from(int(c) + 2, src, int(c) + 1);
        ins.step();
        ins.reset();
        ++stats.measurements;
        touched.emplace(src.text(dev), src.text(dtype), src.text(op), p, k, src.i64(n));
      }
    }
    // The best rows of what was touched, by the rule of add_measurements.
    for (const auto& [uuid, dtype, op, problem, count, n] : touched)
      impl_->refresh_best(uuid, dtype, op, problem, count, n);
    if (!pub_cols.empty()) {
      Stmt src(raw, "SELECT " + join(pub_cols) + " FROM published ORDER BY rowid");
      Stmt ins(ours, "INSERT INTO published (" + join(pub_cols) + ") VALUES (" +
                            placeholders(1, pub_cols.size()) + ") ON CONFLICT DO NOTHING");
      while (src.step()) {
        for (std::size_t c = 0; c < pub_cols.size(); ++c) ins.bind_from(int(c) + 1, src, int(c));
        ins.step();
        stats.published += std::size_t(sqlite3_changes(ours));
        ins.reset();
      }
    }
    // User reductions' descriptions (schema 6), once per name. The same name with another
    // description (a hash collision) is refused: the other store's rows of it are not this one's.
    if (has_reductions) {
      Stmt src(raw, "SELECT name, canonical, text, first_seen FROM reductions ORDER BY name");
      Stmt known(ours, "SELECT canonical FROM reductions WHERE name = ?1");
      Stmt ins(ours, "INSERT INTO reductions (name, canonical, text, first_seen) VALUES (?1, ?2, ?3, ?4)");
      while (src.step()) {
        known.bind_from(1, src, 0);
        if (known.step()) {
          if (known.text(0) != src.text(1))
            throw StoreError(what + ": " + src.text(0) + " is stored in both with different descriptions");
          known.reset();
          continue;
        }
        known.reset();
        for (int c = 0; c < 4; ++c) ins.bind_from(c + 1, src, c);
        ins.step();
        ins.reset();
        ++stats.reductions;
      }
    }
    // Recorded call points (schema 4): one row per (device, dtype, op, problem, count, n). A
    // point both stores hold keeps the earliest first sighting and the latest last one, and the
    // grade and GPU name seen last (what the call ran with most recently).
    if (!rec_cols.empty()) {
      std::string set;
      for (const auto& c : rec_cols) {
        if (c == "first_seen") set += std::string(set.empty() ? "" : ", ") + "first_seen = min(first_seen, excluded.first_seen)";
        else if (c == "last_seen") set += std::string(set.empty() ? "" : ", ") + "last_seen = max(last_seen, excluded.last_seen)";
        else if (c == "grade" || c == "device_name")
          set += (set.empty() ? "" : ", ") + c + " = CASE WHEN excluded.last_seen > last_seen THEN excluded." + c +
                 " ELSE " + c + " END";
      }
      Stmt src(raw, "SELECT " + join(rec_cols) + " FROM recorded");
      Stmt known(ours, "SELECT 1 FROM recorded WHERE device_uuid = ?1 AND dtype = ?2 AND op = ?3 AND problem = ?4 "
                       "AND count = ?5 AND n = ?6");
      Stmt ins(ours, "INSERT INTO recorded (" + join(rec_cols) + ") VALUES (" + placeholders(1, rec_cols.size()) +
                         ") ON CONFLICT (device_uuid, dtype, op, problem, count, n) DO UPDATE SET " + set);
      const int key_cols[] = {index_of(rec_cols, "device_uuid"), index_of(rec_cols, "dtype"), index_of(rec_cols, "op"),
                              index_of(rec_cols, "problem"), index_of(rec_cols, "count"), index_of(rec_cols, "n")};
      while (src.step()) {
        for (int k = 0; k < 6; ++k) known.bind_from(k + 1, src, key_cols[k]);
        stats.recorded += !known.step();
        known.reset();
        for (std::size_t c = 0; c < rec_cols.size(); ++c) ins.bind_from(int(c) + 1, src, int(c));
        ins.step();
        ins.reset();
      }
    }
  });
  exec(raw, "COMMIT");
  return stats;
}

} // namespace reduce_tune::db
