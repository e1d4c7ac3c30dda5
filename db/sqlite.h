// reduce-tune store: a small, strict layer over the sqlite3 C API, shared by the store's files.
// Every call is checked; statements are prepared once and reused; writes run in IMMEDIATE
// transactions. Internal to db/.
#pragma once

#include "db/store.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

namespace reduce_tune::db::sql {

inline constexpr int kBusyTimeoutMs = 10'000;
inline constexpr int kBusyRetries = 4; ///< after the busy timeout, with 50, 100, 200, 400 ms pauses

[[noreturn]] inline void fail(sqlite3* db, int rc, std::string_view what) {
  std::string msg = "reduce-tune store";
  if (const char* file = db ? sqlite3_db_filename(db, "main") : nullptr; file && *file)
    msg += std::string(" ") + file;
  const int code = db ? sqlite3_extended_errcode(db) : rc;
  msg += ": " + std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) +
         " (SQLite code " + std::to_string(code) + ")";
  throw StoreError(msg, code);
}

inline void check(sqlite3* db, int rc, std::string_view what) {
  if (rc != SQLITE_OK) fail(db, rc, what);
}

inline void exec(sqlite3* db, const char* sql) { check(db, sqlite3_exec(db, sql, nullptr, nullptr, nullptr), sql); }

/// Problem sizes are SQLite integers (int64); 0 is not a size.
inline std::int64_t sql_size(std::uint64_t n) {
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

/// Another store file opened with `flags` (never SQLITE_OPEN_CREATE here: merge and ship read
/// files that must exist): extended result codes, the busy timeout; throws, naming the path.
inline std::unique_ptr<sqlite3, CloseDb> open_connection(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<sqlite3, CloseDb> db(raw);
  check(raw, rc, "open " + path);
  sqlite3_extended_result_codes(raw, 1);
  check(raw, sqlite3_busy_timeout(raw, kBusyTimeoutMs), "busy_timeout");
  return db;
}


} // namespace reduce_tune::db::sql
