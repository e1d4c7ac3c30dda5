// reduce-tune: the stores the lookup reads besides the user's own: the tuning shipped with the
// library (compiled into it, so it is found wherever the library is) and a user's existing store.
#pragma once

#include "db/store.h"

#include <memory>
#include <span>
#include <string>

namespace reduce_tune {

/// The shipped tuning's database image, compiled into the library from share/reduce-tune/tuning.db
/// at build time.
std::span<const unsigned char> embedded_tuning();

/// Where the shipped tuning comes from: $REDUCE_TUNE_SHIPPED_DB if set (empty: none), else
/// `preferred` if given (Options::shipped_path), else the image compiled into the library.
struct ShippedSource {
  enum class Kind { none, file, embedded };
  Kind kind = Kind::embedded;
  std::string path; ///< the file, for Kind::file
  /// "the environment's <path>", "<path>", "built into the library", "switched off ..."
  std::string describe() const;
};
ShippedSource shipped_source(const std::string& preferred = {});

/// Opens the shipped tuning read-only; null, with the reason in *why, when there is none or it
/// cannot be used (missing, corrupt, of another schema): the lookup then goes on without it.
std::unique_ptr<db::Store> open_shipped_store(std::string* why, const std::string& preferred = {});

/// Opens the store at `path` if the file exists; never creates one. Returns null, with the reason
/// in *why, when there is no file or it cannot be used (not a reduce-tune store, newer schema).
std::unique_ptr<db::Store> open_existing_store(const std::string& path, std::string* why);

} // namespace reduce_tune
