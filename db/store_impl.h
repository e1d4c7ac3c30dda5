// reduce-tune store: the open database (Store::Impl) and the row formats the store's files share.
// Internal to db/.
#pragma once

#include "db/sqlite.h"
#include "db/store.h"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace reduce_tune::db {

/// Marks a database as ours (PRAGMA application_id), so a foreign one is recognised even when it
/// happens to use user_version too.
inline constexpr int kApplicationId = 0x52447475; // "RDtu"

// Column lists, in the order the row readers below expect them.
extern const std::string kDeviceCols;
extern const std::string kRunCols;
extern const std::string kMeasurementCols; ///< of measurements as `m`
extern const std::string kSelectBest;      ///< device, run and kMeasurementCols of best `b` JOIN `m`

DeviceRecord read_device(const sql::Stmt& s);
RunRecord read_run(const sql::Stmt& s);
/// Reads kMeasurementCols starting at column c; nullopt for a dtype, op or problem this build
/// does not know (a newer build's row), and for a user reduction's row unless `users` (readers
/// that do not ask for one never see one as a built-in op's).
std::optional<Measurement> read_measurement(const sql::Stmt& s, int c, bool users = false);
std::optional<Best> read_best(const sql::Stmt& s, bool users = false);

struct Store::Impl {
  std::unique_ptr<sqlite3, sql::CloseDb> db;
  std::unordered_map<std::string, sql::Stmt> cache; // declared after db: finalized before the close
  std::string label; ///< names a store with no file (an image in memory) in messages

  /// Opens (creating) the file, refuses an unusable one, migrates an older one (schema.cpp).
  Impl(const std::string& path, Store::Mode mode);
  /// Read-only over an image in memory (schema.cpp).
  Impl(std::span<const unsigned char> image, const std::string& label);

  /// Binds args to ?1, ?2, ... of the cached statement for sql.
  template <class... A> sql::Query query(const std::string& text, const A&... args) {
    sql::Query q(&cache.try_emplace(text, db.get(), text).first->second);
    int i = 0;
    (q->bind(++i, args), ...);
    return q;
  }

  /// Runs body in a write transaction, under retry_busy.
  template <class F> void write(F&& body) {
    sql::retry_busy([&] {
      sql::Transaction tx(db.get());
      body();
      tx.commit();
    });
  }

  /// Recomputes the best row of (device, dtype, op, problem, count, n) from its measurements: the
  /// valid one with the lowest median wins, ties to the earliest row; an invalid one never does.
  /// Names are as stored (writes.cpp).
  void refresh_best(const std::string& uuid, const std::string& dtype, const std::string& op,
                    const std::string& problem, std::int64_t count, std::int64_t n);

  /// Whether the database has the table (a read-only store of an older schema may lack it).
  bool has_table(const std::string& table) {
    const auto q = query("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", table);
    return q->step() && q->i64(0) > 0;
  }

  /// Throws unless the database is empty or a reduce-tune one this build can read; returns its
  /// user_version (schema.cpp).
  int refuse_unusable();
  /// Applies the missing migrations (schema.cpp).
  void migrate();

  /// The first best row of `where`, which names the op (a user reduction's rows too).
  template <class... A> std::optional<Best> best_where(const std::string& where, const A&... args) {
    const auto q = query(kSelectBest + where, args...);
    while (q->step())
      if (auto b = read_best(*q, /*users=*/true)) return b;
    return std::nullopt;
  }
};

} // namespace reduce_tune::db
