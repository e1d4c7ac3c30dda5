// The store tests' way around the library: SQL run on a store file with a plain sqlite3
// connection, as a foreign tool would (to age a store's schema, corrupt it or look inside).
#pragma once

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <string>

namespace reduce_tune::testing {

/// Runs `sql` on the file; a failure fails the test with SQLite's message.
inline void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  INFO(msg);
  REQUIRE(rc == SQLITE_OK);
}

} // namespace reduce_tune::testing
