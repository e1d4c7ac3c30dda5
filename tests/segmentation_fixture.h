// The segmentation of a dense row-major matrix, as the CPU tests of references and checks build
// it: `shape.count` rows of `shape.length` elements, rows `stride` elements apart (0: the length).
#pragma once

#include "tuner/reference.h"

#include <cstdint>

namespace reduce_tune::testing {

inline Segmentation rows_of(Shape shape, std::uint64_t stride = 0) {
  Segmentation s;
  s.problem = Problem::rows;
  s.shape = shape;
  s.stride = stride ? stride : shape.length;
  return s;
}

} // namespace reduce_tune::testing
