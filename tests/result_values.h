// Results written by hand for the checks' tests: a value in a dtype, and one result of a results
// array set to it.
#pragma once

#include "kernels/values.h"

#include <cstddef>
#include <cstring>

namespace reduce_tune::testing {

/// `v` in dtype `d` (rounded once).
inline Scalar as_dtype(double v, DType d) {
  return visit_value(d, [&](auto t) {
    using R = decltype(t);
    return Scalar::of(R(v));
  });
}

/// Result `i` of `got` (of got.dtype) set to `v`.
inline void put_result(HostArray& got, std::size_t i, Scalar v) {
  const std::size_t rs = size_of(got.dtype);
  std::memcpy(got.bytes.data() + i * rs, &v.bits, rs);
}

} // namespace reduce_tune::testing
