// TEMPORARY (removed when main's segmented definitions are merged): weak stand-ins for the
// segmented calls that reduce_tune/reducer.h declares, so the extension links before they land.
// A strong definition in the library wins at link time.
#include "reduce_tune/reducer.h"

#include <stdexcept>

namespace reduce_tune {

[[gnu::weak]] void Reducer::reduce_rows(DType, Op, const void*, std::uint64_t, std::uint64_t, void*,
                                        CUstream, std::uint64_t) {
  throw std::logic_error("reduce_tune: reduce_rows is not implemented in this build");
}
[[gnu::weak]] void Reducer::reduce_columns(DType, Op, const void*, std::uint64_t, std::uint64_t,
                                           void*, CUstream, std::uint64_t) {
  throw std::logic_error("reduce_tune: reduce_columns is not implemented in this build");
}
[[gnu::weak]] void Reducer::reduce_segments(DType, Op, const void*, const std::int64_t*,
                                            std::uint64_t, void*, CUstream) {
  throw std::logic_error("reduce_tune: reduce_segments is not implemented in this build");
}
[[gnu::weak]] Choice Reducer::config_for(DType, Op, Problem, Shape) const {
  throw std::logic_error("reduce_tune: config_for(problem, shape) is not implemented in this build");
}

} // namespace reduce_tune
