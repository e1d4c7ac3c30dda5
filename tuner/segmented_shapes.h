// reduce-tune: the default grid of shapes of a segmented problem's sweep.
#pragma once

#include "reduce_tune/config.h"

#include <vector>

namespace reduce_tune {

/// The default shapes of a problem's sweep: segment lengths 1, 4, ..., 2^24 and 3, 1000, each
/// with the count that makes 2^16, 2^20 and 2^24 elements, and 2^28 elements at lengths 2^12 and
/// 2^20 (rows, columns); for offsets, 2^8..2^20 (2^24) segments of a skewed length mix over 2^20
/// and 2^24 elements, 2^23 segments over 2^24, 2^16 segments over 2^28, and 2^1, 2^3, ..., 2^15
/// segments over 2^16.
std::vector<Shape> default_shapes(Problem problem);

} // namespace reduce_tune
