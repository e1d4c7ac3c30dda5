// reduce-tune: counts of the call path's slower steps since the library was loaded: the Python
// package reports them (reduce_tune._ext.stats) and its tests check that a warm call takes none.
// Not installed.
#pragma once

#include <atomic>
#include <cstdint>

namespace reduce_tune::detail {

struct Counters {
  /// cuPointerGetAttributes of a call's pointer (check_pointer).
  std::atomic<std::uint64_t> pointer_queries{0};
  /// Asynchronous calls that took the full path: not the same call again on the same thread
  /// (runtime/warm.h), a pointer not known from an earlier check, or a capturing stream.
  std::atomic<std::uint64_t> cold_calls{0};
};

inline Counters counters;

} // namespace reduce_tune::detail
