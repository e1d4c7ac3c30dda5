// reduce-tune store: opening a database, its schema and the ordered migrations between versions.
#include "db/store_impl.h"

#include "kernels/trust.h"

#include <cstring>
#include <filesystem>

namespace reduce_tune::db {
namespace {

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
    // 3: segmented problems. A measurement and a best row are of a problem kind and a shape
    // (count results of n elements each); what earlier versions stored is the array problem,
    // one result of n elements.
    R"sql(
ALTER TABLE measurements ADD COLUMN problem TEXT NOT NULL DEFAULT 'array';
ALTER TABLE measurements ADD COLUMN count INTEGER NOT NULL DEFAULT 1 CHECK (count > 0);
DROP INDEX measurements_lookup;
CREATE INDEX measurements_lookup ON measurements (device_uuid, dtype, op, problem, count, n);
CREATE TABLE best_v3 (
  device_uuid TEXT NOT NULL REFERENCES devices (uuid),
  dtype TEXT NOT NULL,
  op TEXT NOT NULL,
  problem TEXT NOT NULL,
  count INTEGER NOT NULL,
  n INTEGER NOT NULL,
  measurement_id INTEGER NOT NULL REFERENCES measurements (id),
  PRIMARY KEY (device_uuid, dtype, op, problem, count, n)
) WITHOUT ROWID;
INSERT INTO best_v3 SELECT device_uuid, dtype, op, 'array', 1, n, measurement_id FROM best;
DROP TABLE best;
ALTER TABLE best_v3 RENAME TO best;
)sql",
    // 4: the call points a program made without an exact tuning (Options::record), one row a
    // point; n is 0 for offsets looked up by their segment count alone.
    R"sql(
CREATE TABLE recorded (
  device_uuid TEXT NOT NULL,
  device_name TEXT NOT NULL,
  dtype TEXT NOT NULL,
  op TEXT NOT NULL,
  problem TEXT NOT NULL,
  count INTEGER NOT NULL CHECK (count > 0),
  n INTEGER NOT NULL CHECK (n >= 0),
  grade TEXT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  PRIMARY KEY (device_uuid, dtype, op, problem, count, n)
) WITHOUT ROWID;
)sql",
    // 5: first-use tuning (Options::autotune): the process measuring a point holds its claim, so
    // that several processes tuning into one store measure it once. A claim lapses at `expires`
    // (Unix seconds), or earlier where its owner, a process of this host, is gone.
    R"sql(
CREATE TABLE claims (
  device_uuid TEXT NOT NULL,
  dtype TEXT NOT NULL,
  op TEXT NOT NULL,
  problem TEXT NOT NULL,
  count INTEGER NOT NULL,
  n INTEGER NOT NULL,
  owner TEXT NOT NULL,
  expires REAL NOT NULL,
  PRIMARY KEY (device_uuid, dtype, op, problem, count, n)
) WITHOUT ROWID;
)sql",
    // 6: user reductions (reduce_tune/reduction.h). Their measurements and best rows are stored
    // under `user:<hash>` in the op column of the tables above; this table keeps each one's
    // description once, so that the CLI can show it and tune it again.
    R"sql(
CREATE TABLE IF NOT EXISTS reductions (
  name TEXT NOT NULL PRIMARY KEY,
  canonical TEXT NOT NULL,
  text TEXT NOT NULL,
  first_seen TEXT NOT NULL
) WITHOUT ROWID;
)sql",
};

} // namespace

using namespace sql;

Store::Impl::Impl(const std::string& path, Store::Mode mode) {
  const bool read_only = mode == Store::Mode::read_only;
  if (path != ":memory:" && !read_only) {
    std::error_code ec;
    if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty()) {
      try {
        create_private_directories(dir);
      } catch (const std::filesystem::filesystem_error& e) {
        ec = e.code();
      }
    }
    if (ec) throw StoreError("reduce-tune store: cannot create the directory of " + path + ": " + ec.message());
  }
  // A store others may replace picks the kernels its users run (kernels/trust.h).
  if (path != ":memory:" && !path.starts_with("file:"))
    if (auto why = untrusted_store(path)) throw StoreError("reduce-tune store: " + *why);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                 read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                 nullptr);
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

  if (read_only) {
    const int version = refuse_unusable();
    if (version < kOldestReadable)
      throw StoreError("reduce-tune store: " + path + " has schema version " + std::to_string(version) +
                       "; read-only, it can be read at versions " + std::to_string(kOldestReadable) + " to " +
                       std::to_string(schema_version()) + " only");
    return;
  }
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

Store::Impl::Impl(std::span<const unsigned char> image, const std::string& label_) : label(label_) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE, nullptr);
  db.reset(raw);
  if (rc != SQLITE_OK) throw StoreError("reduce-tune store: cannot open " + label + ": " + sqlite3_errstr(rc), rc);
  sqlite3_extended_result_codes(raw, 1);
  // READONLY without FREEONCLOSE: SQLite reads the image in place and never writes or frees it.
  check(raw,
        sqlite3_deserialize(raw, "main", const_cast<unsigned char*>(image.data()),
                            static_cast<sqlite3_int64>(image.size()), static_cast<sqlite3_int64>(image.size()),
                            SQLITE_DESERIALIZE_READONLY),
        "deserialize " + label);
  const int version = refuse_unusable();
  if (version < kOldestReadable)
    throw StoreError("reduce-tune store: " + label + " has schema version " + std::to_string(version) +
                     "; read-only, it can be read at versions " + std::to_string(kOldestReadable) + " to " +
                     std::to_string(schema_version()) + " only");
}

/// Throws unless the database is empty or a reduce-tune one this build can read; returns its
/// user_version. A file that is not SQLite at all fails here with SQLITE_NOTADB.
int Store::Impl::refuse_unusable() {
  const char* name = sqlite3_db_filename(db.get(), "main");
  const std::string file = name && *name ? name : label;
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
void Store::Impl::migrate() {
  write([&] {
    for (int v = refuse_unusable(); v < schema_version(); ++v)
      check(db.get(), sqlite3_exec(db.get(), kMigrations[v], nullptr, nullptr, nullptr),
            "migration to schema version " + std::to_string(v + 1));
    exec(db.get(), ("PRAGMA application_id = " + std::to_string(kApplicationId) +
                    "; PRAGMA user_version = " + std::to_string(schema_version()))
                       .c_str());
  });
}

Store::Store(const std::string& path, Mode mode) : impl_(std::make_unique<Impl>(path, mode)) {}
Store::Store(std::span<const unsigned char> image, const std::string& label)
    : impl_(std::make_unique<Impl>(image, label)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

int Store::schema_version() { return static_cast<int>(std::size(kMigrations)); }


int Store::user_version() const {
  const auto q = impl_->query("PRAGMA user_version");
  q->step();
  return q->i32(0);
}

} // namespace reduce_tune::db
