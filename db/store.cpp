// reduce-tune: the SQLite store. A small, strict layer over the sqlite3 C API: every call is
// checked, statements are prepared once and reused, writes run in IMMEDIATE transactions.
#include "db/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace reduce_tune::db {
namespace {

/// Marks a database as ours (PRAGMA application_id), so a foreign one is recognised even when it
/// happens to use user_version too.
constexpr int kApplicationId = 0x52447475; // "RDtu"

/// Ordered migrations: entry i brings the schema from version i to i + 1. Append, never edit.
/// REAL columns are nullable: SQLite stores NaN as NULL, and it is read back as NaN.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE devices (
  uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  cc_major INTEGER NOT NULL,
  cc_minor INTEGER NOT NULL,
  sm_count INTEGER NOT NULL,
  l2_bytes INTEGER NOT NULL,
  total_mem_bytes INTEGER NOT NULL,
  mem_clock_khz INTEGER NOT NULL,
  bus_width_bits INTEGER NOT NULL,
  peak_gbps REAL,
  driver_version INTEGER NOT NULL,
  host TEXT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL
);
CREATE INDEX devices_cc ON devices (cc_major, cc_minor);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  device_uuid TEXT NOT NULL REFERENCES devices (uuid),
  tool_version TEXT NOT NULL,
  nvrtc_version TEXT NOT NULL,
  options TEXT NOT NULL,
  timing_method TEXT NOT NULL,
  started TEXT NOT NULL,
  ended TEXT,
  status TEXT NOT NULL CHECK (status IN ('running', 'done', 'interrupted', 'failed'))
);
CREATE INDEX runs_device ON runs (device_uuid);
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  device_uuid TEXT NOT NULL REFERENCES devices (uuid),
  key TEXT NOT NULL,
  variant TEXT NOT NULL,
  block INTEGER NOT NULL,
  unroll INTEGER NOT NULL,
  vec INTEGER NOT NULL,
  grid INTEGER NOT NULL,
  tail TEXT NOT NULL,
  finish TEXT NOT NULL,
  dtype TEXT NOT NULL,
  op TEXT NOT NULL,
  n INTEGER NOT NULL CHECK (n > 0),
  median_us REAL,
  min_us REAL,
  max_us REAL,
  host_us REAL,
  reps INTEGER NOT NULL,
  gbps REAL,
  pct_peak REAL,
  valid INTEGER NOT NULL CHECK (valid IN (0, 1)),
  error TEXT NOT NULL,
  expected TEXT NOT NULL,
  observed TEXT NOT NULL,
  seed INTEGER NOT NULL,
  cold INTEGER NOT NULL CHECK (cold IN (0, 1)),
  created TEXT NOT NULL
);
CREATE INDEX measurements_lookup ON measurements (device_uuid, dtype, op, n);
CREATE INDEX measurements_run ON measurements (run_id);
CREATE TABLE best (
  device_uuid TEXT NOT NULL REFERENCES devices (uuid),
  dtype TEXT NOT NULL,
  op TEXT NOT NULL,
  n INTEGER NOT NULL,
  measurement_id INTEGER NOT NULL REFERENCES measurements (id),
  PRIMARY KEY (device_uuid, dtype, op, n)
) WITHOUT ROWID;
)sql",
    // 2: the course material's published timings (data/published.csv, reduce-tune
    // import-reference); never measurements of this store. Missing values are NULL.
    R"sql(
CREATE TABLE published (
  doc TEXT NOT NULL,
  gpu TEXT NOT NULL,
  arch TEXT NOT NULL,
  kernel TEXT NOT NULL,
  ord INTEGER,
  dtype TEXT NOT NULL,
  n INTEGER NOT NULL CHECK (n > 0),
  block INTEGER,
  time_ms REAL NOT NULL,
  gbps REAL,
  step_speedup REAL,
  cumulative_speedup REAL,
  note TEXT NOT NULL,
  UNIQUE (doc, gpu, kernel, dtype, n)
);
)sql",
};

constexpr int kBusyTimeoutMs = 10'000;
constexpr int kBusyRetries = 4; ///< after the busy timeout, with 50, 100, 200, 400 ms pauses

[[noreturn]] void fail(sqlite3* db, int rc, std::string_view what) {
  std::string msg = "reduce-tune store";
  if (const char* file = db ? sqlite3_db_filename(db, "main") : nullptr; file && *file)
    msg += std::string(" ") + file;
  const int code = db ? sqlite3_extended_errcode(db) : rc;
  msg += ": " + std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) +
         " (SQLite code " + std::to_string(code) + ")";
  throw StoreError(msg, code);
}

void check(sqlite3* db, int rc, std::string_view what) {
  if (rc != SQLITE_OK) fail(db, rc, what);
}

void exec(sqlite3* db, const char* sql) { check(db, sqlite3_exec(db, sql, nullptr, nullptr, nullptr), sql); }

/// Problem sizes are SQLite integers (int64); 0 is not a size.
std::int64_t sql_size(std::uint64_t n) {
  if (n == 0 || n > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    throw StoreError("reduce-tune store: problem size " + std::to_string(n) + " is not in 1..2^63-1");
  return static_cast<std::int64_t>(n);
}

/// A prepared statement, reused: bind, step, reset.
class Stmt {
public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db), sql_(sql) {
    check(db_, sqlite3_prepare_v3(db_, sql_.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr),
          "prepare " + sql_);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  /// Unsigned 64-bit values must be converted explicitly (sql_size, or a bit cast for seeds).
  template <class T> void bind(int i, const T& v) {
    int rc;
    if constexpr (std::is_convertible_v<const T&, std::string_view>) {
      const std::string_view s = v;
      rc = sqlite3_bind_text(s_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    } else if constexpr (std::is_floating_point_v<T>) {
      rc = sqlite3_bind_double(s_, i, v);
    } else {
      static_assert(std::is_integral_v<T> && !std::is_same_v<T, std::uint64_t>);
      rc = sqlite3_bind_int64(s_, i, v);
    }
    check(db_, rc, "bind ?" + std::to_string(i) + " of " + sql_);
  }
  /// Binds column c of `from`'s current row to ?i, as it is (copying rows between databases).
  void bind_from(int i, const Stmt& from, int c) {
    check(db_, sqlite3_bind_value(s_, i, sqlite3_column_value(from.s_, c)), "bind ?" + std::to_string(i) + " of " + sql_);
  }
  /// True while there is a row.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(db_, rc, "step " + sql_);
    return rc == SQLITE_ROW;
  }
  /// Ends the statement's (read) transaction and forgets the bindings. Step errors were thrown
  /// already, so sqlite3_reset's repeat of them is not.
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  std::int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  int i32(int c) const { return static_cast<int>(i64(c)); }
  bool flag(int c) const { return i64(c) != 0; }
  double real(int c) const {
    return sqlite3_column_type(s_, c) == SQLITE_NULL ? std::numeric_limits<double>::quiet_NaN()
                                                    : sqlite3_column_double(s_, c);
  }
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s_, c))) : std::string();
  }

private:
  sqlite3* db_;
  std::string sql_;
  sqlite3_stmt* s_ = nullptr;
};

/// A cached statement in use: reset when this goes, so no read transaction outlives the use.
struct ResetStmt {
  void operator()(Stmt* s) const { s->reset(); }
};
using Query = std::unique_ptr<Stmt, ResetStmt>;

/// BEGIN IMMEDIATE (so concurrent writers queue on the busy timeout instead of deadlocking on a
/// lock upgrade); rolls back in the destructor unless committed.
class Transaction {
public:
  explicit Transaction(sqlite3* db) : db_(db) { exec(db_, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() { exec(db_, "COMMIT"); }

private:
  sqlite3* db_;
};

/// Calls f, and again with backoff while it fails with SQLITE_BUSY past the busy timeout. Some
/// lock waits do not use the busy handler at all: the switch to WAL while another connection
/// opens the same new file fails at once.
template <class F> void retry_busy(F&& f) {
  for (int attempt = 0;; ++attempt) {
    try {
      f();
      return;
    } catch (const StoreError& e) {
      if ((e.code() & 0xff) != SQLITE_BUSY || attempt == kBusyRetries) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50 << attempt));
  }
}

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};

/// The size in `sizes` nearest to n by |log2(size / n)|, ties to the larger size. Ratios are
/// compared exactly, as 128-bit cross products, so that equal ratios really tie.
std::optional<std::uint64_t> nearest_size(const std::vector<std::uint64_t>& sizes, std::uint64_t n) {
  using u128 = unsigned __int128;
  std::optional<std::uint64_t> best;
  for (const std::uint64_t t : sizes) {
    if (best) {
      const auto [t_lo, t_hi] = std::minmax(t, n);
      const auto [b_lo, b_hi] = std::minmax(*best, n);
      const u128 t_ratio = u128(t_hi) * b_lo, b_ratio = u128(b_hi) * t_lo;
      if (t_ratio > b_ratio || (t_ratio == b_ratio && t < *best)) continue;
    }
    best = t;
  }
  return best;
}

const std::string kDeviceCols = "uuid, name, cc_major, cc_minor, sm_count, l2_bytes, total_mem_bytes, "
                                "mem_clock_khz, bus_width_bits, peak_gbps, driver_version, host";
const std::string kRunCols =
    "id, device_uuid, tool_version, nvrtc_version, options, timing_method, started, ended, status";
const std::string kMeasurementCols =
    "m.key, m.variant, m.block, m.unroll, m.vec, m.grid, m.tail, m.finish, m.dtype, m.op, m.n, "
    "m.median_us, m.min_us, m.max_us, m.host_us, m.reps, m.gbps, m.pct_peak, m.valid, m.error, "
    "m.expected, m.observed, m.seed, m.cold, m.run_id";
const std::string kSelectBest = "SELECT m.device_uuid, m.run_id, " + kMeasurementCols +
                                " FROM best b JOIN measurements m ON m.id = b.measurement_id ";

DeviceRecord read_device(const Stmt& s) {
  DeviceRecord d;
  d.uuid = s.text(0);
  d.name = s.text(1);
  d.cc_major = s.i32(2);
  d.cc_minor = s.i32(3);
  d.sm_count = s.i32(4);
  d.l2_bytes = s.i64(5);
  d.total_mem_bytes = s.i64(6);
  d.mem_clock_khz = s.i32(7);
  d.bus_width_bits = s.i32(8);
  d.peak_gbps = s.real(9);
  d.driver_version = s.i32(10);
  d.host = s.text(11);
  return d;
}

RunRecord read_run(const Stmt& s) {
  return {s.i64(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6), s.text(7), s.text(8)};
}

/// Reads kMeasurementCols starting at column c.
Measurement read_measurement(const Stmt& s, int c) {
  Measurement m;
  m.key = s.text(c++);
  m.variant = s.text(c++);
  m.block = s.i32(c++);
  m.unroll = s.i32(c++);
  m.vec = s.i32(c++);
  m.grid = s.i32(c++);
  m.tail = s.text(c++);
  m.finish = s.text(c++);
  m.dtype = s.text(c++);
  m.op = s.text(c++);
  m.n = static_cast<std::uint64_t>(s.i64(c++));
  m.median_us = s.real(c++);
  m.min_us = s.real(c++);
  m.max_us = s.real(c++);
  m.host_us = s.real(c++);
  m.reps = s.i32(c++);
  m.gbps = s.real(c++);
  m.pct_peak = s.real(c++);
  m.valid = s.flag(c++);
  m.error = s.text(c++);
  m.expected = s.text(c++);
  m.observed = s.text(c++);
  m.seed = static_cast<std::uint64_t>(s.i64(c++)); // stored as the int64 with the same bits
  m.cold = s.flag(c++);
  m.run_id = s.i64(c++);
  return m;
}

Best read_best(const Stmt& s) {
  Best b;
  b.device_uuid = s.text(0);
  b.run_id = s.i64(1);
  b.m = read_measurement(s, 2);
  b.dtype = b.m.dtype;
  b.op = b.m.op;
  b.n = b.m.n;
  return b;
}

} // namespace

struct Store::Impl {
  std::unique_ptr<sqlite3, CloseDb> db;
  std::unordered_map<std::string, Stmt> cache; // declared after db: finalized before the close

  explicit Impl(const std::string& path) {
    if (path != ":memory:") {
      std::error_code ec;
      if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty())
        std::filesystem::create_directories(dir, ec);
      if (ec) throw StoreError("reduce-tune store: cannot create the directory of " + path + ": " + ec.message());
    }
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    db.reset(raw);
    if (rc != SQLITE_OK) {
      // A failed open has no file name to report: name the path, and what the system said.
      std::string why = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
      if (const int e = raw ? sqlite3_system_errno(raw) : 0) why += std::string(": ") + std::strerror(e);
      throw StoreError("reduce-tune store: cannot open " + path + ": " + why + " (SQLite code " +
                           std::to_string(rc) + ")", rc);
    }
    sqlite3_extended_result_codes(raw, 1);
    check(raw, sqlite3_busy_timeout(raw, kBusyTimeoutMs), "busy_timeout");

    // Decide on the database as found, before anything (the WAL switch included) writes to it.
    int version = 0;
    retry_busy([&] {
      version = refuse_unusable();
      if (const char* file = sqlite3_db_filename(raw, "main"); file && *file)
        exec(raw, "PRAGMA journal_mode = WAL");
    });
    exec(raw, "PRAGMA foreign_keys = ON");
    // With WAL, NORMAL still survives a crash or kill -9 of the process (only a power loss can
    // drop the last commits), and makes a commit per measurement cheap.
    exec(raw, "PRAGMA synchronous = NORMAL");
    if (version < schema_version()) migrate();
  }

  /// Binds args to ?1, ?2, ... of the cached statement for sql.
  template <class... A> Query query(const std::string& sql, const A&... args) {
    Query q(&cache.try_emplace(sql, db.get(), sql).first->second);
    int i = 0;
    (q->bind(++i, args), ...);
    return q;
  }

  /// Recomputes the best row of (device, dtype, op, n) from its measurements: the valid one with
  /// the lowest median wins, ties to the earliest row; an invalid one never does.
  void refresh_best(const std::string& uuid, const std::string& dtype, const std::string& op,
                    std::int64_t n) {
    query("INSERT INTO best (device_uuid, dtype, op, n, measurement_id) "
          "SELECT device_uuid, dtype, op, n, id FROM measurements WHERE device_uuid = ?1 AND "
          "dtype = ?2 AND op = ?3 AND n = ?4 AND valid = 1 AND median_us IS NOT NULL "
          "ORDER BY median_us, id LIMIT 1 "
          "ON CONFLICT (device_uuid, dtype, op, n) DO UPDATE SET measurement_id = excluded.measurement_id",
          uuid, dtype, op, n)
        ->step();
  }

  /// Runs body in a write transaction, under retry_busy.
  template <class F> void write(F&& body) {
    retry_busy([&] {
      Transaction tx(db.get());
      body();
      tx.commit();
    });
  }

  /// Throws unless the database is empty or a reduce-tune one this build can read; returns its
  /// user_version. A file that is not SQLite at all fails here with SQLITE_NOTADB.
  int refuse_unusable() {
    const std::string file = sqlite3_db_filename(db.get(), "main");
    Query q;
    try {
      q = query("SELECT (SELECT user_version FROM pragma_user_version), "
                "(SELECT application_id FROM pragma_application_id), "
                "(SELECT count(*) FROM sqlite_master)");
      q->step();
    } catch (const StoreError& e) {
      if ((e.code() & 0xff) != SQLITE_NOTADB) throw;
      throw StoreError("reduce-tune store: " + file + " is not a SQLite database", e.code());
    }
    const int version = q->i32(0), app = q->i32(1);
    const std::int64_t objects = q->i64(2);
    if (version == 0 && app == 0 && objects == 0) return 0;
    // No build writes a version below 1: such a file is not ours (and the version is no index).
    if (app != kApplicationId || version < 1)
      throw StoreError("reduce-tune store: " + file + " is a foreign database (application_id " +
                       std::to_string(app) + ", user_version " + std::to_string(version) + ", " +
                       std::to_string(objects) + " schema objects), not a reduce-tune store");
    if (version > schema_version())
      throw StoreError("reduce-tune store: " + file + " has schema version " + std::to_string(version) +
                       ", newer than this build's " + std::to_string(schema_version()));
    return version;
  }

  /// Applies the missing migrations; re-checks inside the transaction, since another process may
  /// have migrated the database since it was inspected.
  void migrate() {
    write([&] {
      for (int v = refuse_unusable(); v < schema_version(); ++v)
        check(db.get(), sqlite3_exec(db.get(), kMigrations[v], nullptr, nullptr, nullptr),
              "migration to schema version " + std::to_string(v + 1));
      exec(db.get(), ("PRAGMA application_id = " + std::to_string(kApplicationId) +
                      "; PRAGMA user_version = " + std::to_string(schema_version()))
                         .c_str());
    });
  }

  std::optional<Best> best_where(const std::string& where, auto... args) {
    const auto q = query(kSelectBest + where, args...);
    if (!q->step()) return std::nullopt;
    return read_best(*q);
  }
};

Store::Store(const std::string& path) : impl_(std::make_unique<Impl>(path)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

int Store::schema_version() { return static_cast<int>(std::size(kMigrations)); }

int Store::user_version() const {
  const auto q = impl_->query("PRAGMA user_version");
  q->step();
  return q->i32(0);
}

void Store::upsert_device(const DeviceRecord& d) {
  impl_->write([&] {
    impl_->query("INSERT INTO devices (" + kDeviceCols + ", first_seen, last_seen) VALUES "
                 "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                 "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), strftime('%Y-%m-%dT%H:%M:%SZ', 'now')) "
                 "ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, cc_major = excluded.cc_major, "
                 "cc_minor = excluded.cc_minor, sm_count = excluded.sm_count, l2_bytes = excluded.l2_bytes, "
                 "total_mem_bytes = excluded.total_mem_bytes, mem_clock_khz = excluded.mem_clock_khz, "
                 "bus_width_bits = excluded.bus_width_bits, peak_gbps = excluded.peak_gbps, "
                 "driver_version = excluded.driver_version, host = excluded.host, last_seen = excluded.last_seen",
                 d.uuid, d.name, d.cc_major, d.cc_minor, d.sm_count, d.l2_bytes, d.total_mem_bytes,
                 d.mem_clock_khz, d.bus_width_bits, d.peak_gbps, d.driver_version, d.host)
        ->step();
  });
}

std::vector<DeviceRecord> Store::devices() const {
  std::vector<DeviceRecord> out;
  const auto q = impl_->query("SELECT " + kDeviceCols + " FROM devices ORDER BY rowid");
  while (q->step()) out.push_back(read_device(*q));
  return out;
}

std::optional<DeviceRecord> Store::device(const std::string& uuid) const {
  const auto q = impl_->query("SELECT " + kDeviceCols + " FROM devices WHERE uuid = ?1", uuid);
  if (!q->step()) return std::nullopt;
  return read_device(*q);
}

std::int64_t Store::begin_run(const RunRecord& r) {
  std::int64_t id = 0;
  impl_->write([&] {
    const auto q = impl_->query("INSERT INTO runs (device_uuid, tool_version, nvrtc_version, options, "
                                "timing_method, started, status) VALUES (?1, ?2, ?3, ?4, ?5, "
                                "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), 'running') RETURNING id",
                                r.device_uuid, r.tool_version, r.nvrtc_version, r.options, r.timing_method);
    q->step();
    id = q->i64(0);
  });
  return id;
}

void Store::end_run(std::int64_t run_id, const std::string& status) {
  impl_->write([&] {
    impl_->query("UPDATE runs SET ended = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), status = ?2 WHERE id = ?1",
                 run_id, status)
        ->step();
    if (sqlite3_changes(impl_->db.get()) != 1)
      throw StoreError("reduce-tune store: end_run: no run " + std::to_string(run_id));
  });
}

std::vector<RunRecord> Store::runs() const {
  std::vector<RunRecord> out;
  const auto q = impl_->query("SELECT " + kRunCols + " FROM runs ORDER BY id");
  while (q->step()) out.push_back(read_run(*q));
  return out;
}

void Store::add_measurements(std::int64_t run_id, const std::vector<Measurement>& ms) {
  impl_->write([&] {
    std::string uuid;
    {
      const auto q = impl_->query("SELECT device_uuid FROM runs WHERE id = ?1", run_id);
      if (!q->step()) throw StoreError("reduce-tune store: add_measurements: no run " + std::to_string(run_id));
      uuid = q->text(0);
    }
    // The fastest valid new row per (dtype, op, n): (median, id); the earliest of equal ones.
    std::map<std::tuple<std::string, std::string, std::int64_t>, std::pair<double, std::int64_t>> fastest;
    for (const Measurement& m : ms) {
      const std::int64_t n = sql_size(m.n);
      impl_->query("INSERT INTO measurements (run_id, device_uuid, key, variant, block, unroll, vec, grid, "
                   "tail, finish, dtype, op, n, median_us, min_us, max_us, host_us, reps, gbps, pct_peak, "
                   "valid, error, expected, observed, seed, cold, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                   "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, "
                   "?25, ?26, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
                   run_id, uuid, m.key, m.variant, m.block, m.unroll, m.vec, m.grid, m.tail, m.finish, m.dtype,
                   m.op, n, m.median_us, m.min_us, m.max_us, m.host_us, m.reps, m.gbps, m.pct_peak, m.valid,
                   m.error, m.expected, m.observed, static_cast<std::int64_t>(m.seed), m.cold)
          ->step();
      if (!m.valid || std::isnan(m.median_us)) continue; // NaN is stored as NULL: never the best
      const std::int64_t id = sqlite3_last_insert_rowid(impl_->db.get());
      const auto [it, first] = fastest.try_emplace({m.dtype, m.op, n}, m.median_us, id);
      if (!first && m.median_us < it->second.first) it->second = {m.median_us, id};
    }
    // Older rows are unchanged, so the best is the stored best or the fastest new row, whichever
    // is faster (ties to the stored one, the earlier row): the rule of refresh_best without
    // reading every row of the size again (which made a sweep's one-row commits quadratic).
    for (const auto& [k, v] : fastest) {
      const auto& [dtype, op, n] = k;
      impl_->query("INSERT INTO best (device_uuid, dtype, op, n, measurement_id) VALUES (?1, ?2, ?3, ?4, ?5) "
                   "ON CONFLICT (device_uuid, dtype, op, n) DO UPDATE SET measurement_id = "
                   "excluded.measurement_id WHERE ?6 < (SELECT median_us FROM measurements WHERE id = "
                   "best.measurement_id)",
                   uuid, dtype, op, n, v.second, v.first)
          ->step();
    }
  });
}

std::vector<Measurement> Store::measurements(const std::string& device_uuid, const std::string& dtype,
                                             const std::string& op, std::uint64_t n) const {
  std::vector<Measurement> out;
  const auto q = impl_->query("SELECT " + kMeasurementCols + " FROM measurements m WHERE m.device_uuid = ?1 "
                              "AND (?2 = '' OR m.dtype = ?2) AND (?3 = '' OR m.op = ?3) "
                              "AND (?4 = 0 OR m.n = ?4) ORDER BY m.id",
                              device_uuid, dtype, op, n ? sql_size(n) : std::int64_t(0));
  while (q->step()) out.push_back(read_measurement(*q, 0));
  return out;
}

std::vector<std::string> Store::measured_keys(const std::string& device_uuid, const std::string& dtype,
                                              const std::string& op, std::uint64_t n,
                                              std::int64_t run_id) const {
  std::vector<std::string> out;
  const auto q = impl_->query("SELECT DISTINCT key FROM measurements WHERE device_uuid = ?1 AND dtype = ?2 "
                              "AND op = ?3 AND n = ?4 AND (?5 = 0 OR run_id = ?5) ORDER BY key",
                              device_uuid, dtype, op, sql_size(n), run_id);
  while (q->step()) out.push_back(q->text(0));
  return out;
}

std::optional<Best> Store::best(const std::string& device_uuid, const std::string& dtype, const std::string& op,
                                std::uint64_t n) const {
  return impl_->best_where("WHERE b.device_uuid = ?1 AND b.dtype = ?2 AND b.op = ?3 AND b.n = ?4", device_uuid,
                           dtype, op, sql_size(n));
}

std::optional<Best> Store::nearest(const std::string& device_uuid, const std::string& dtype, const std::string& op,
                                   std::uint64_t n) const {
  std::vector<std::uint64_t> sizes;
  {
    const auto q = impl_->query("SELECT n FROM best WHERE device_uuid = ?1 AND dtype = ?2 AND op = ?3",
                                device_uuid, dtype, op);
    while (q->step()) sizes.push_back(static_cast<std::uint64_t>(q->i64(0)));
  }
  const auto size = nearest_size(sizes, static_cast<std::uint64_t>(sql_size(n)));
  return size ? best(device_uuid, dtype, op, *size) : std::nullopt;
}

std::optional<Best> Store::nearest_same_arch(int cc_major, int cc_minor, const std::string& dtype,
                                             const std::string& op, std::uint64_t n) const {
  const std::string arch = "JOIN devices d ON d.uuid = b.device_uuid WHERE d.cc_major = ?1 AND d.cc_minor = ?2 "
                           "AND b.dtype = ?3 AND b.op = ?4 ";
  std::vector<std::uint64_t> sizes;
  {
    const auto q = impl_->query("SELECT DISTINCT b.n FROM best b " + arch, cc_major, cc_minor, dtype, op);
    while (q->step()) sizes.push_back(static_cast<std::uint64_t>(q->i64(0)));
  }
  const auto size = nearest_size(sizes, static_cast<std::uint64_t>(sql_size(n)));
  if (!size) return std::nullopt;
  return impl_->best_where(arch + "AND b.n = ?5 ORDER BY m.median_us, m.id LIMIT 1", cc_major, cc_minor, dtype, op,
                           static_cast<std::int64_t>(*size));
}

std::vector<Best> Store::bests(const std::string& device_uuid) const {
  std::vector<Best> out;
  const auto q = impl_->query(kSelectBest + "WHERE b.device_uuid = ?1 ORDER BY b.dtype, b.op, b.n", device_uuid);
  while (q->step()) out.push_back(read_best(*q));
  return out;
}

// ---- merge and published rows --------------------------------------------------------------

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
  if (const char* mine = sqlite3_db_filename(ours, "main"); mine && *mine &&
      std::filesystem::equivalent(mine, other_path, ec))
    return {}; // a store merged into itself: everything is already here

  // Never created (no SQLITE_OPEN_CREATE), migrated or written (query_only). Not opened
  // read-only: a read-only connection to a WAL file leaves -wal and -shm files behind, where a
  // read-write one, the last to close, removes them.
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(other_path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  std::unique_ptr<sqlite3, CloseDb> other(raw);
  check(raw, rc, "open " + other_path);
  sqlite3_extended_result_codes(raw, 1);
  check(raw, sqlite3_busy_timeout(raw, kBusyTimeoutMs), "busy_timeout");
  exec(raw, "PRAGMA query_only = 1");
  exec(raw, "BEGIN"); // one consistent snapshot of the other store, even while a tuner writes it
  int version = 0;
  bool has_published = false;
  {
    Stmt q(raw, "SELECT (SELECT user_version FROM pragma_user_version), "
                   "(SELECT application_id FROM pragma_application_id), "
                   "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'published')");
    q.step();
    version = int(q.i64(0));
    has_published = q.i64(2) > 0;
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
    // Measurements: the same measurement is (run, key, dtype, op, n, seed).
    using Identity = std::tuple<std::string, std::string, std::string, std::int64_t, std::int64_t>;
    std::unordered_map<std::int64_t, std::set<Identity>> present; // for runs this store had already
    {
      Stmt have(ours, "SELECT key, dtype, op, n, seed FROM measurements WHERE run_id = ?1");
      for (const std::int64_t id : existing_runs) {
        have.bind(1, id);
        auto& s = present[id];
        while (have.step()) s.emplace(have.text(0), have.text(1), have.text(2), have.i64(3), have.i64(4));
        have.reset();
      }
    }
    std::set<std::tuple<std::string, std::string, std::string, std::int64_t>> touched;
    {
      Stmt src(raw, "SELECT run_id, " + join(m_cols) + " FROM measurements ORDER BY id");
      Stmt ins(ours, "INSERT INTO measurements (run_id, " + join(m_cols) + ") VALUES (?1, " +
                            placeholders(2, m_cols.size()) + ")");
      const int key = 1 + index_of(m_cols, "key"), dtype = 1 + index_of(m_cols, "dtype"),
                op = 1 + index_of(m_cols, "op"), n = 1 + index_of(m_cols, "n"), seed = 1 + index_of(m_cols, "seed"),
                dev = 1 + index_of(m_cols, "device_uuid");
      while (src.step()) {
        const auto run = run_of.find(src.i64(0));
        if (run == run_of.end())
          throw StoreError(what + ": measurement of unknown run " + std::to_string(src.i64(0)));
        if (existing_runs.count(run->second) &&
            !present[run->second].emplace(src.text(key), src.text(dtype), src.text(op), src.i64(n), src.i64(seed)).second) {
          ++stats.duplicates;
          continue;
        }
        ins.bind(1, run->second);
        for (std::size_t c = 0; c < m_cols.size(); ++c) ins.bind_from(int(c) + 2, src, int(c) + 1);
        ins.step();
        ins.reset();
        ++stats.measurements;
        touched.emplace(src.text(dev), src.text(dtype), src.text(op), src.i64(n));
      }
    }
    // The best rows of what was touched, by the rule of add_measurements.
    for (const auto& [uuid, dtype, op, n] : touched)
      impl_->refresh_best(uuid, dtype, op, n);
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
  });
  exec(raw, "COMMIT");
  return stats;
}

std::size_t Store::import_published(const std::vector<PublishedRecord>& rows) {
  std::size_t changed = 0;
  impl_->write([&] {
    changed = 0;
    for (const PublishedRecord& r : rows) {
      // NULL for what the document does not give; an unchanged row is not rewritten.
      auto opt = [](double v) { return std::isnan(v) ? std::optional<double>() : std::optional<double>(v); };
      const auto gbps = opt(r.gbps), step = opt(r.step_speedup), cum = opt(r.cumulative_speedup);
      const auto q = impl_->query(
          "INSERT INTO published (doc, gpu, arch, kernel, ord, dtype, n, block, time_ms, gbps, step_speedup, "
          "cumulative_speedup, note) VALUES (?1, ?2, ?3, ?4, nullif(?5, 0), ?6, ?7, nullif(?8, 0), ?9, "
          "iif(?11, ?10, NULL), iif(?13, ?12, NULL), iif(?15, ?14, NULL), ?16) "
          "ON CONFLICT (doc, gpu, kernel, dtype, n) DO UPDATE SET arch = excluded.arch, ord = excluded.ord, "
          "block = excluded.block, time_ms = excluded.time_ms, gbps = excluded.gbps, "
          "step_speedup = excluded.step_speedup, cumulative_speedup = excluded.cumulative_speedup, "
          "note = excluded.note WHERE (arch, ord, block, time_ms, gbps, step_speedup, cumulative_speedup, note) "
          "IS NOT (excluded.arch, excluded.ord, excluded.block, excluded.time_ms, excluded.gbps, "
          "excluded.step_speedup, excluded.cumulative_speedup, excluded.note)",
          r.doc, r.gpu, r.arch, r.kernel, r.order, r.dtype, sql_size(r.n), r.block, r.time_ms,
          gbps.value_or(0), int(gbps.has_value()), step.value_or(0), int(step.has_value()), cum.value_or(0),
          int(cum.has_value()), r.note);
      q->step();
      changed += std::size_t(sqlite3_changes(impl_->db.get()));
    }
  });
  return changed;
}

std::vector<PublishedRecord> Store::published(const std::string& doc_prefix) const {
  std::vector<PublishedRecord> out;
  const auto q = impl_->query("SELECT doc, gpu, arch, kernel, coalesce(ord, 0), dtype, n, coalesce(block, 0), "
                              "time_ms, gbps, step_speedup, cumulative_speedup, note FROM published "
                              "WHERE substr(doc, 1, length(?1)) = ?1 ORDER BY rowid",
                              doc_prefix);
  while (q->step()) {
    PublishedRecord r;
    r.doc = q->text(0);
    r.gpu = q->text(1);
    r.arch = q->text(2);
    r.kernel = q->text(3);
    r.order = q->i32(4);
    r.dtype = q->text(5);
    r.n = static_cast<std::uint64_t>(q->i64(6));
    r.block = q->i32(7);
    r.time_ms = q->real(8);
    r.gbps = q->real(9);
    r.step_speedup = q->real(10);
    r.cumulative_speedup = q->real(11);
    r.note = q->text(12);
    out.push_back(std::move(r));
  }
  return out;
}

std::string default_store_path() {
  if (const char* e = std::getenv("REDUCE_TUNE_DB"); e && *e) return e;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    return (std::filesystem::path(x) / "reduce-tune" / "tuning.db").string();
  const char* home = std::getenv("HOME");
  return (std::filesystem::path(home && *home ? home : ".") / ".local" / "share" / "reduce-tune" /
          "tuning.db").string();
}

} // namespace reduce_tune::db
